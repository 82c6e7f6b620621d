"""The clause splitter and the clause guard: where a message is cut, what is cleaned off
each clause, and each guard mark with its scope (both sides: the mark, and the text that
looks like it but is not)."""

from __future__ import annotations

from typing import get_args

import pytest

from buddy.capabilities.character.appraisal import Guard
from buddy.capabilities.memory.clauses import CLAUSES_MAX, GUARDS, clauses, clean


def _texts(message: str) -> list[str]:
    return [c.text for c in clauses(message)]


@pytest.mark.parametrize(
    ("message", "texts"),
    [
        ("我叫小美，不吃香菜，对芒果过敏", ["我叫小美", "不吃香菜", "对芒果过敏"]),
        ("我不吃辣！！！也不吃香菜！！！", ["我不吃辣", "也不吃香菜"]),
        ("我喜欢吃火锅；不喜欢吃西餐", ["我喜欢吃火锅", "不喜欢吃西餐"]),
        ("我对花生、芒果过敏", ["我对花生", "芒果过敏"]),
        ("以后叫我阿杰\n我不吃辣", ["以后叫我阿杰", "我不吃辣"]),
        ("我家两口人，我和猫🐱", ["我家两口人", "我和猫"]),
        ("叫我宝宝😘我不吃葱", ["叫我宝宝", "我不吃葱"]),
        ("我叫小美 不吃香菜", ["我叫小美", "不吃香菜"]),  # a space between Chinese words
        ("我叫 Kevin", ["我叫Kevin"]),  # a space next to a Latin letter is only spacing
        ("叫我 Tom Lee", ["叫我Tom Lee"]),
        ("我欠你1,000块", ["我欠你1,000块"]),  # a comma between digits stays
        ("我欠你2.5元.", ["我欠你2.5元"]),
        ("叫我「小鱼」", ["叫我小鱼"]),  # quotation marks go
        ("（翻白眼）谢谢你", ["翻白眼", "谢谢你"]),
        ("哈哈哈", []),
        ("～～", []),
        # a conjunction inside a clause cuts it, and goes
        ("我爱吃海鲜但海鲜过敏", ["我爱吃海鲜", "海鲜过敏"]),
        ("我讨厌跑步但是没办法", ["我讨厌跑步", "没办法"]),
        ("我喜欢猫不过对猫毛过敏", ["我喜欢猫", "对猫毛过敏"]),
        ("我不吃辣而且不吃葱", ["我不吃辣", "不吃葱"]),
        ("先吃饭然后散步", ["先吃饭", "散步"]),
        ("我对小麦不过敏", ["我对小麦不过敏"]),  # 不过敏 is no 不过
        ("我打不过他", ["我打不过他"]),
        ("不但好吃而且便宜", ["不但好吃", "便宜"]),  # 不但 is no 但
        ("但愿明天不下雨", ["但愿明天不下雨"]),
        ("一共不过三十块", ["一共不过三十块"]),  # 不过 before a number: only
    ],
)
def test_a_message_is_cut_into_clauses(message: str, texts: list[str]) -> None:
    assert _texts(message) == texts


@pytest.mark.parametrize(
    ("message", "text"),
    [
        ("以后叫我小鱼吧～", "以后叫我小鱼"),  # trailing particles and ～
        ("我对花生过敏啦", "我对花生过敏"),
        ("叫我小林就好啦", "叫我小林就好"),
        ("我不吃了", "我不吃"),
        ("嗯嗯，以后就叫我团子", "以后就叫我团子"),
        ("对了我对头孢过敏", "我对头孢过敏"),  # openers
        ("其实我不吃辣", "我不吃辣"),
        ("记住你欠我一万块", "你欠我一万块"),
        ("我跟你说我叫小美", "我叫小美"),
        ("跟你说话真累", "跟你说话真累"),  # 「跟你说话」 is no opener
        ("你还欠我一杯咖啡呢", "你还欠我一杯咖啡"),
        ("我叫林晓，不过大家都叫我晓晓", "大家都叫我晓晓"),  # a conjunction opens it
        ("但是我不吃辣", "我不吃辣"),
        ("说起来我对虾过敏", "我对虾过敏"),
        ("不过三块钱", "不过三块钱"),  # not alone before what it opens: 不过 is 'only'
    ],
)
def test_each_clause_loses_its_opener_and_trailing_particles(message: str, text: str) -> None:
    assert _texts(message)[-1] == text


@pytest.mark.parametrize(
    ("value", "cleaned"),
    [
        ("宝宝～", "宝宝"),
        ("小鱼吧", "小鱼"),
        ("「阿杰」", "阿杰"),
        ("月月😊", "月月"),
        ("老王！", "老王"),
        ("完赛就行", "完赛"),  # what closes a value without being part of it
        ("小鱼就好吧", "小鱼"),
        ("就行", "就行"),  # nothing but the closer: left as it is
    ],
)
def test_a_value_is_cleaned(value: str, cleaned: str) -> None:
    assert clean(value) == cleaned


def _marks(message: str) -> list[set[str]]:
    return [set(c.guards) for c in clauses(message)]


@pytest.mark.parametrize(
    ("message", "marks"),
    [
        # question: the clause only
        ("我欠你多少来着？", [{"question"}]),
        ("我对花生过敏吗", [{"question"}]),
        ("你叫我小李干嘛", [{"question"}]),
        ("我叫小美吗？不，我叫小梅", [{"question"}, set(), set()]),
        ("你是不是吃醋了", [{"question", "denial"}]),  # 是不是 asks, 不是 denies
        ("我不怎么吃肉", [set()]),  # 不怎么 asks nothing
        ("我对咖啡没什么兴趣", [set()]),
        ("你还欠我一杯咖啡呢", [set()]),  # 呢 alone is no question
        ("我对吗啡过敏", [set()]),  # 吗 inside a word
        # hypothetical: to the end of the sentence
        ("如果我对花生过敏，我叫你一声", [{"hypothetical"}, {"hypothetical"}]),
        ("要是我欠你钱。我叫小美", [{"hypothetical"}, set()]),
        ("对不起有用的话要警察干嘛", [{"hypothetical", "question"}]),
        # denial: the clause
        ("我不是不吃香菜", [{"denial"}]),
        ("别叫我宝宝，叫我小鱼", [{"denial"}, set()]),
        ("我特别喜欢吃甜食", [set()]),  # 特别 is no 别
        ("我不吃香菜", [set()]),  # plain 不 is the patterns' business
        # reported: to the end of the sentence
        ("他对我说滚", [{"reported", "third_party"}]),
        ("医生说，我对青霉素过敏", [{"reported"}, {"reported"}]),
        ("听说你喜欢吃辣，我也喜欢吃辣", [{"reported"}, {"reported"}]),
        ("说好的，我欠你三杯奶茶", [set(), set()]),  # nobody else is saying it
        ("我说你真烦", [set()]),
        # third party: on to the clauses that name no subject of their own
        ("我妈对花生过敏，不吃海鲜", [{"third_party"}, {"third_party"}]),
        ("我妈对海鲜过敏，我对芒果过敏", [{"third_party"}, set()]),
        ("孩子对牛奶过敏", [{"third_party"}]),
        ("朋友们都叫我大头", [set()]),
        ("我们家三口人", [set()]),
        # joke: the whole message; laughter: the clause, with the emoji after it
        ("我欠你一百万，开玩笑的", [{"joke"}, {"joke"}]),
        # a joke taken back marks what came before it, not what comes after
        ("叫我大哥，开玩笑的啦，叫我小吴", [{"joke"}, {"joke"}, set()]),
        ("骗你的，我叫小美", [{"joke"}, set()]),
        ("开个玩笑，我欠你一百万", [{"joke"}, {"joke"}]),  # 开个玩笑 says one is coming
        ("开玩笑的，叫我小吴，跟你开玩笑呢", [{"joke"}, {"joke"}, {"joke"}]),
        ("哈哈滚啦", [{"laughter"}]),
        ("我对早起过敏😂", [{"laughter"}]),
        ("哈哈，滚", [set()]),
        # laughter of its own marks the clause before it
        ("你欠我一杯奶茶 哈哈哈 说好的", [{"laughter"}, set()]),
        ("哈哈哈 叫我小满", [set()]),
        # someone else's name for the user, taken up (「你也这么叫」), is the user's
        ("朋友都叫我远远，你也这么叫吧", [set(), set()]),
        ("我哥都喊俺铁蛋 你也这么喊呗", [set(), set()]),  # 俺 is 我
        ("我爸叫我胖墩，你可别这么叫", [{"third_party"}, set()]),
        # 算了 takes back the clause before it
        ("我欠你两杯奶茶，算了，三杯", [{"denial"}, set(), set()]),
        ("我欠你一杯奶茶，才怪", [{"denial"}, set()]),
        # 「别当真」 on its own: a joke; inside a clause it is about something else
        ("你欠我一百块，别当真", [{"joke"}, {"joke", "denial"}]),
        ("对不起，那些话你别当真好不好", [set(), {"question"}]),
        # a request not meant: 「反正你也不会真叫」
        ("叫我秦王也行，反正你也不会真叫", [{"joke"}, {"joke"}]),
        ("随便说说，我欠你一百", [{"joke"}, {"joke"}]),
        # irony: 反话 takes the message back (not 「不是反话」)
        ("我最爱加班了，哈哈哈反话", [{"joke"}, {"joke", "laughter"}]),
        ("我最爱周一了 说反话呢", [{"joke"}, {"joke"}]),
        # a ？ after a sentence marks each part a conjunction cut
        ("你喜欢猫但讨厌狗？", [{"question"}, {"question"}]),
        ("我喜欢猫但你喜欢什么", [set(), {"question"}]),
        # a tag asking the buddy to agree to a name closes a request, not a question; the
        # name itself asked is one
        ("你叫我阿凯好不好呀", [set()]),
        ("叫我小宇行吗？", [set()]),
        ("你叫我什么好呢", [{"question"}]),
        ("明天七点叫我起床好不好", [{"question"}]),
        # 不咋 is 不太, no question (blind14's round); 咋 alone asks
        ("芒果过敏 不咋严重", [set(), set()]),
        ("这咋整", [{"question"}]),
        # a liking of what nobody likes is irony, that clause only; a dislike of it is plain
        ("我叫阿飞 我爱死加班了", [set(), {"joke"}]),
        ("排队是我的最爱", [{"joke"}]),
        ("最烦排队", [set()]),
        # 没有 that says more is no denial (blind20's round): 没有抵抗力, 没有之一
        ("我对炸鸡没有抵抗力", [set()]),
        ("最爱的运动 没有之一", [set(), set()]),
        ("我没有生气", [{"denial"}]),
        # blind21's round: 几 in a clause closed by 而已 is a few, no question; words said to
        # someone else, said so after them; thanks for a help that made it worse is irony
        ("也就咳几声而已", [set()]),
        ("闭嘴 我是对我家狗说的", [{"third_party"}, set()]),
        ("谢了 帮了倒忙", [{"joke"}, {"joke"}]),
    ],
)
def test_each_guard_mark_and_its_scope(message: str, marks: list[set[str]]) -> None:
    assert _marks(message) == marks


def test_a_long_message_is_read_to_its_first_clauses() -> None:
    message = "，".join(f"第{i}句" for i in range(CLAUSES_MAX + 5))
    assert len(clauses(message)) == CLAUSES_MAX
    assert clauses(message)[-1].text == f"第{CLAUSES_MAX - 1}句"


def test_alone_is_a_message_of_one_clause() -> None:
    assert [c.alone for c in clauses("烦死了！！")] == [True]
    assert [c.alone for c in clauses("烦死了，这破电脑")] == [False, False]
    assert [c.alone for c in clauses("哈哈，烦死了")] == [True]  # 「哈哈」 is no clause


def test_the_appraisal_files_marks_are_the_guards() -> None:
    assert set(get_args(Guard)) == set(GUARDS)


@pytest.mark.parametrize(
    ("message", "text", "marks"),
    [
        # a Cantonese sentence-final particle is dropped; a closing 咩 asks (not 咩咩, a name)
        ("我好钟意饮早茶㗎", "我好钟意饮早茶", set()),
        ("我钟意食辣嘅", "我钟意食辣", set()),
        ("你钟意食咩", "你钟意食咩", {"question"}),
        ("叫我咩咩", "叫我咩咩", set()),
        # Henan's bare 中 after a title closes a request; a name ending in 中 keeps it
        ("你叫我兰姨中", "你叫我兰姨", set()),
        ("叫我建中", "叫我建中", set()),
    ],
)
def test_the_dialect_tags_blind15_showed(message: str, text: str, marks: set[str]) -> None:
    (clause,) = clauses(message)
    assert (clause.text, set(clause.guards)) == (text, marks)
