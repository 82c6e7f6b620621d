"""A message as patterns read it: its clauses, each cleaned and marked by the **clause
guard** — the shared check that keeps what a user did not assert about themself (a
question, a supposition, a denial, someone else's words, someone else, a joke) from
becoming a fact, whatever a relation's own pattern says.

A message is cut into clauses at ，。！？；、：～ (and their ASCII forms), …, brackets, line
breaks, emoji, ``+`` and ``=`` not before a number (「一个人住+猫毛过敏」, not 「两顿饭+一杯咖啡」),
a space between two Chinese characters (「我叫小美 不吃香菜」, not before 外加) or after a Latin
word (「叫我Teddy 我一个人住」: voice input and WeChat leave out the commas) or before an
acronym that opens a clause of its own (「我要减到标准体重 BMI正常就行」), and an aside
such as btw or xswl between spaces; not after 目标 (「今年目标：跑一次全马」 is one clause). A
comma or point between two digits stays (``1,000``, ``2.5``), so does a point inside a Latin
name (「叫我Dr.Wang」), and another space next to a Latin letter or a digit goes (「我叫 Kevin」 is 「我叫Kevin」). Quotation marks are dropped. A
clause is cut again where a conjunction joins two of them without a comma — 但、但是、
不过、而且、然后 (「我爱吃海鲜但海鲜过敏」 is 「我爱吃海鲜」 and 「海鲜过敏」), not 不但、但愿、不过敏、
打不过、喘不过气、不过三十块 — the conjunction dropped; a ？ or laughter after the sentence marks each
part of it. A reason glued on — 因为、由于、所以 — starts a clause of its own (「不能吃海鲜因为
痛风」 is 「不能吃海鲜」 and 「因为痛风」; not 是因为、之所以), and a clause that only takes back the
one before it — 不对、不、说错了、口误、算了、才怪 — marks that one a ``denial``: 「我欠你一万个赞，不对，是欠你
二十块」 is read as 「是欠你二十块」. Each clause then loses what opens or closes it without meaning anything:
openers (嗯、哦、对了、其实、说真的、我跟你说、记住、不过、但是、可 before 我、还有、顺便说一句…) and trailing
particles (吧、啊、呀、呢、哦、嘛、啦、哈、Sichuan 噻, Cantonese 㗎、嘅、喎、囉、啫、噃、喇、了…; not the 了 of
吃不了、受不了), so a pattern
written ``^叫我(?P<value>…)$`` reads 「以后叫我小鱼吧～」's clause 「叫我小鱼」 as the author
meant. A doctor's words are about the user, not someone else's: 「医生说我对青霉素过敏」
is read as 「我对青霉素过敏」 (not 「听医生说」). A message's first :data:`CLAUSES_MAX`
clauses are read.

The guard's marks (:data:`GUARDS`), each with its scope:

- ``question`` (the clause): it ends with ？ or 吗/么, or has a question word — 什么、啥、
  怎么、为什么、干嘛、哪、谁、几、多少、如何、是不是、有没有、对吧、是吧、好不好、能不能、
  要不要、要不、来着、难道, Cantonese 好唔好、得唔得 (「好唔好食」), a closing Cantonese 咩 (not 咩咩, a name)… — not 不怎么、不咋、没什么、没啥 (「我不怎么吃肉」「不咋严重」「没啥大事」), 什么的 (「螃蟹什么的」:
  and so on), 说了多少遍 (a reproach) or 几下 said of a symptom (「挠几下就不痒了」). A clause ending in 呢 alone is not a question
  (「你还欠我一杯咖啡呢」); one with a question word is. A request for a name closed by a tag
  asking the buddy to agree — 好不好、好吗、行不行、中不、好唔好, Henan's bare 中 after a title (「你叫我兰姨中」)… (「你叫我糖糖好不好嘛」「叫我豆豆好不好？」)
  — is a request, not a question: the tag is dropped (「你叫我糖糖」); the name itself asked
  (「你叫我什么好呢」) is one.
- ``hypothetical`` (the clause and the rest of its sentence): 如果、要是、假如、假设、万一、
  若是、倘若、假使、的话、要不是、哪怕、即使、就算 (not 就算了, 就算我欠你的, 称呼的话, nor 严重的话:
  「严重的话会休克」 says how bad it gets).
- ``denial`` (the clause): 不是、并不、并没、才不、才没、没说、从没、没有 (not 没有抵抗力、没有之一:
  「我对奶茶没有抵抗力」 says more, not less), or a clause that opens with 别、不要、不用 (「别叫我宝宝」;
  not 「特别」). Plain 不 is the patterns'
  business: 「我不吃香菜」 is a fact.
- ``reported`` (the clause and the rest of its sentence, up to a clause said to the buddy —
  谢谢…、你…, not the words right after someone's 「…说」: 「我妈老跟我爸说 你闭嘴吧」): 听说、
  据说、有人说, or someone else saying it (他说、我妈说、他对我说、男主对女主说…).
- ``third_party`` (the clause, and the clauses after it in its sentence that name no
  subject of their own): it opens with someone else — 他、她、他们、别人、人家、我妈、我家孩子、
  我朋友、老公、老伴、孩子、同事、老板、表哥、邻居… (「我妈对花生过敏，不吃海鲜」: neither clause is the
  user's; 「…太土了，还是叫我力力吧」 and 「家里就我们俩」 name the user again). A name
  someone else calls the user, taken up by the next clause (「朋友都叫我远远，你也这么叫吧」),
  is the user's: that clause is not marked.
- ``joke`` (the whole message; a joke taken back — 「开玩笑的」「骗你的啦」 as a clause of its
  own — only the clauses up to it: 「叫我大哥，开玩笑的，叫我小吴」): 开玩笑、逗你、骗你的、
  说着玩、闹着玩、说说而已、反话 (irony: 「我最爱的就是加班了 哈哈哈哈反话」)、「别当真」、
  「反正你也不会真叫」、「这辈子都还不上」…, irony said with a 呵呵 of two (「堵车真是我的最爱 呵呵」;
  not 呵呵呵), a liking said of what nobody likes (the clause: 「我爱死堵车了」「其实我就是爱加班」;
  not 「最烦排队」), and irony an emoji carries — 🙃, or 🙂 after a
  cheer or a stance said again with 太、真 (「堵车我最喜欢了 真开心哦🙂」「我喜欢加班 真的 太喜欢了
  🙂」; not a plain 🙂).
- ``laughter`` (the clause, with the emoji after it, or a laugh of its own after it:
  「你欠我一个男朋友 哈哈哈」): 哈哈、嘿嘿、嘻嘻、hhh、233、😂、🤣….

Relation patterns never run on a clause with any mark. An appraisal file chooses, per
kind, which marks stop it (:mod:`buddy.capabilities.character.appraisal`). Standard
library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["CLAUSES_MAX", "GUARDS", "Clause", "clauses", "clean"]

#: Clauses of one message read, at most: each is searched by every pattern, so a long
#: message costs in proportion (and the time budget bounds the rest).
CLAUSES_MAX = 32
#: The clause guard's marks.
GUARDS = ("question", "hypothetical", "denial", "reported", "third_party", "joke", "laughter")

_EMOJI = "\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u2300-\u23ff\ufe0f\u200d"
_ENDS = "。！？!?；;\n\r…"
_HAN = "\u4e00-\u9fff"
_CUT = re.compile(
    rf"((?:[{_ENDS}、～~（）()【】\[\]<>|/\t{_EMOJI}]|(?<!目标)[，：:]|(?<!\d),|,(?!\d)"
    r"|(?<![\dA-Za-z])\.|\.(?![\dA-Za-z])|(?<=\d)\.(?=[A-Za-z])|(?<=[A-Za-z])\.(?=\d)"
    rf"|(?<=[{_HAN}])(?<!目标) +(?=[{_HAN}])(?!外加)|(?<=[A-Za-z]) +(?=[{_HAN}])"
    rf"|(?<=[{_HAN}]) +(?=[A-Z]{{2,}}(?![吧啊呀呢哦嘛啦哈就])[{_HAN}])"
    r"|(?<!\d)[+＋=＝](?![\d零一二两三四五六七八九十百千俩仨])"
    r"| *(?<![A-Za-z])(?:btw|BTW|Btw|by the way|xswl|awsl|nsdd)(?![A-Za-z]) *)+)"
)
#: A conjunction inside a clause: where a value ends (「讨厌平板但没办法」 is not an object).
_JOINED = re.compile(
    r"(?<=[^\s，])(?:(?<!不)但(?:是)?(?![愿凡])|(?<![比打说跑斗拼争赢熬挨躲逃信不喘透])不过"
    r"(?![敏0-9零一二两三四五六七八九十百千几是如就了去来])|而且|然后"
    r"|(?<![我是就也都正只还又不之])(?=(?:因为|由于|所以)\S))(?=\S)"
)
#: A clause that takes back the one before it: 「我欠你一万个赞，不对，是欠你二十块」.
_CORRECTION = re.compile(
    r"^(?:不对|不|错了|说错了|我说错了|口误|打错了|更正一下|更正|算了?|才怪)+$"
)
_QUOTES = re.compile("[「」『』“”‘’\"'《》]")
_SPACE = re.compile(r"(?<![A-Za-z]) +| +(?![A-Za-z])")
_OPENERS = re.compile(
    r"^(?:(?:嗯|哦|噢|喔|诶|欸|哎呀|哎哟|哎|唉|呃|啊|哈|嘿|em+)+|对了|其实|另外|顺便说(?:一句|一下|下)|顺便提一句|顺便|话说|"
    r"说真的|老实说|说实话|我?跟你说(?!话|不通)|我?告诉你(?:说)?(?!话)|记住|记着|好的|好吧|OK|ok|"
    r"说起来|不过(?![0-9零一二两三四五六七八九十百千几敏])|但是?(?![愿凡])|可是|可(?=我)|可惜|然后|而且|"
    r"还有(?=我|你)|u1s1|您好|嗨)+"
)
#: (a southern sentence-final 先, "first", after an amount is one too: 「我还你100先」)
_PARTICLES = re.compile(
    r"(?:[吧啊呀呢哦嘛啦哈哟喔噢呗咯啰嘞捏哇嗷耶嘿嘻噻㗎嘅喎囉啫噃喇吖]|(?<!不)了|h{2,}|233+|"
    r"(?<=[0-9零一二两三四五六七八九十百千万块元个本张杯])先)+$"
)
#: What closes a value without being part of it: 「完赛就行」 is the goal 完赛.
_ENOUGH = re.compile(r"(?:就行|就好|就可以|就成|就够|而已)$")
_QUESTION = re.compile(
    r"(?<![没不])什么(?!的)|(?<![没不])啥|(?<!不)怎么|(?<!不)咋|干嘛|干吗|哪|谁|几(?!下就|下$)(?![^，。]*(?:而已|罢了)$)|多少(?![次遍回])|如何|是不是|是否|有没有|对不对|对吧|是吧|"
    r"好不好|行不行|能不能|可不可以|会不会|要不要|要不|难道|来着|好唔好|得唔得|係唔係|使唔使|[吗么][啊呀哈啦呢]*$|(?<!咩)咩[啊呀啦]*$"
)
_HYPOTHETICAL = re.compile(
    r"如果|(?<!主)要是|(?<!称呼|名字|严重)的话|假如|假设|万一|若是|倘若|如若|假使|要不是|哪怕|即使|就算(?!了|我欠你的)"
)
#: (没有 that says more, not less, is no denial: 「我对奶茶没有抵抗力」「最爱的运动没有之一」)
_DENIAL = re.compile(
    r"不是|并不|并没|(?<!刚)才不|(?<!刚)才没|没说|从没|从来没|没有(?!抵抗力|之一)|^你?(?:别|不要|不用)"
)
_OTHERS = (
    r"他|她|它|TA|ta|人家|别人|有人|大家|网上|新闻|书上|医生|大夫|老师|老板|领导|同事|朋友|"
    r"同学|室友|妈|爸|老公|老婆|男朋友|女朋友|对象|男主|女主|哥|姐|弟|妹"
)
_REPORTED = re.compile(
    rf"听说|据说|听人说|传说|有人说|(?:{_OTHERS})[^，。]{{0,6}}?(?:说|讲|告诉我|问我)"
)
_KIN = (
    r"妈妈?|爸爸?|老公|老婆|男朋友|女朋友|男票|女票|对象|朋友(?!们)|同事|室友|同学|孩子|"
    r"儿子|女儿|老板|领导|闺蜜|家人|家里人|上司|舅舅|姑姑|阿姨|叔叔|爷爷|奶奶|外公|外婆|姥姥|姥爷|"
    r"老伴儿?|老头子|媳妇儿?|婆婆|公公|闺女|孙子|孙女|外孙女?|[表堂][哥姐弟妹]|侄[子女]|外甥女?|邻居|小孩"
)
_THIRD = re.compile(
    rf"^(?:他|她|它|TA|ta|人家|别人|有人|我(?:的|家的?)?(?:{_KIN}|哥哥?|姐姐?|弟弟?|妹妹?|兄弟)|{_KIN})"
)
_SELF = re.compile(r"^(?:还是|那就?|要不)?(?:我|你|您|咱|本人|家里|(?:叫|喊|称呼)我)")
#: A clause said to the buddy ends someone else's words (「她说你很有趣，谢谢你这么耐心」).
_ADDRESSED = re.compile(r"^(?:谢谢|你|您)")
#: Someone else's clause that ends on the verb of speech: the next clause is the words said
#: (「我妈老跟我爸说 你闭嘴吧」), even when it speaks to 你.
_SAYS = re.compile(r"(?:说|讲|骂|喊|吼)(?:道|着)?$")
#: A doctor's words are about the user (「医生说我对青霉素过敏」): not someone else's, and the
#: clause is read without them.
_DOCTOR = re.compile(
    r"^(?![^，。]*听)[\u4e00-\u9fff]{0,5}?(?:医生|大夫)(?:也|都|一直|早就)?(?:说|讲)(?:了|过)?(?=[^，。]{2})"
)
_JOKE = re.compile(
    r"开玩笑|开个玩笑|逗你|骗你的|(?<!不是)(?:说)?反话|说着玩|闹着玩|瞎说的|胡说的|玩笑话|说说而已|随便说说|随口一说|"
    r"不会真的?(?:叫|喊|这么叫|这么喊|信)|(?:这辈子|下辈子)都?还不[上清起完]|下辈子再?还|^你?(?:别|不要)太?当真[啊哈哦啦呀]*$"
)
#: A liking taken back in brackets (「我热爱学习 (假的)」「我爱上班（反话）」): a bracketed
#: 假的、反话、开玩笑 is a joke of the whole message.
_BRACKETED_JOKE = re.compile(r"^\s*(?:假的|反话|开玩笑的?|骗你的)\s*$")
#: Irony (the whole message): a 呵呵 of two (「堵车真是我的最爱 呵呵」「呵呵 谢谢你全家啊」; not
#: 呵呵呵, a laugh), or an emoji: 🙃, or 🙂 closing a cheer or a stance
#: said again with 太、真 (「堵车我最喜欢了 真开心哦🙂」「我喜欢加班 真的 太喜欢了 🙂」); not a
#: plain 🙂 (「叫我小美🙂」); or thanks for a help that made it worse (「谢谢 帮了倒忙」).
_IRONY = re.compile(
    r"(?<!呵)呵呵(?!呵)|🙃|"
    # thanks for a help that made it worse (「谢谢你哦 帮了倒忙」「越帮越忙 多谢了」)
    r"(?:谢|感谢)[^\n]*?(?:帮了?倒忙|越帮越忙)|(?:帮了?倒忙|越帮越忙)[^\n]*?(?:谢|感谢)|"
    r"(?:开心|高兴|幸福|快乐|真棒|真爽|真行|(?:太|真是?|好)(?:喜欢|爱)死?)[哦啊呀呢啦哈了～~！!\s]*🙂"
)
#: Irony in a clause: a liking said of what nobody likes — a jam, overtime, a queue, a meeting,
#: a commute, a Monday (「我爱死堵车了」「其实我就是爱加班」「排队是我的最爱」「加班是我唯一的爱好」): marks the clause a
#: joke; a dislike of them is plain (「最烦排队」).
_NUISANCE = r"堵车|塞车|加班|排队|开会|挤地铁|挤公交|早高峰|晚高峰|通勤|周一|失眠|催婚|写周报|改需求|背锅|内卷|调休|挨骂|被骂"
_NUISANCE_LIKED = re.compile(
    rf"(?<!不)(?:爱|喜欢|迷上)死?了?(?:{_NUISANCE})|(?:{_NUISANCE})[^，。]{{0,4}}?(?:最爱|我(?:最|超|好|太)?(?:爱|喜欢))"
    rf"|(?:{_NUISANCE})是我[^，。]{{0,5}}?爱好"
)
#: A joke taken back: 「开玩笑的」 (not 「开个玩笑」, 「跟你开玩笑呢」).
_RETRACTED = re.compile(
    r"^(?:[^，。]*?(?:开玩笑|逗你|骗你|说着玩|闹着玩|瞎说|胡说)的)+[啦了啊呀哈]*$"
)
#: A clause that takes up the name someone else calls the user by: 「你也这么叫吧」「你也喊嘛」
#: 「你也这么叫得了」.
_ADOPTED = re.compile(
    r"^(?:你|您)?(?:以后)?(?:也|就)?(?:可以)?(?:这样|这么|这样子)?(?:叫|喊|称呼)我?(?:就行|就好|好|也行|得)?$"
)
#: Someone else's clause that names the user (「爸妈叫我阿宝」, and 俺 for 我: 「乡亲们都喊俺二蛋」).
_NAMED = re.compile(r"(?:叫|喊)[我俺](?!们)")
#: A request for a name closed by a tag that asks the buddy to agree (「你叫我糖糖好不好嘛」
#: 「叫我豆豆好不好」「你叫我阿明好唔好」): a request, not a question about the name — the tag
#: is dropped and the clause is not marked a question (not when the name itself is asked:
#: 「你叫我什么好呢」).
_CONSENT = re.compile(
    r"^((?:你|您|恁|侬)?(?:以后|就|也|可以|直接)*(?:叫|喊|称呼)[我俺][^，。\s]{1,10}?)"
    r"(?:好不好|好吗|好么|好嘛|行不行|行吗|行不|(?<![就也都还])可以[吗么不]?|可不可以|成不成|成吗|中不中|中不|好唔好|得唔得"
    # Henan's bare 中 after a title no name ends in (「你叫我兰姨中」; not 「叫我建中」), and after
    # 老、小、阿 and a surname (「恁叫我老郑中」; not 「叫我刘建中」)
    r"|(?<=[姨姐哥叔婶伯嫂爷奶妹弟娃])中|(?<=[叫喊][我俺][老小阿][\u4e00-\u9fff])中)"
    r"[嘛啊呀吧呢哈]*$"
)
#: A later clause that says the words before it were said to someone else (「闭嘴——我冲我家
#: 鹦鹉喊的」「滚 我是对我弟说的」「跟我家狗吼的」): they are someone else's business, not the buddy's
#: — every clause before it is marked third_party.
_SAID_ELSEWHERE = re.compile(r"(?:冲|对|朝|跟)着?(?![你您])[^，。\s]{1,6}?(?:喊|吼|骂|说|嚷|讲)的")
_LAUGHTER = re.compile(r"哈{2,}|呵{2,}|嘿嘿|嘻嘻|[hH]{3,}|233+|lol|LOL|[😂🤣😆😝😜🤪]")


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause of a message.

    Attributes:
        text: The clause as patterns read it: no opener, trailing particle, quotation
            mark or punctuation.
        guards: The clause guard's marks that hold here (:data:`GUARDS`).
        alone: The message is this one clause (「烦死了」, not 「烦死了，这破电脑」).
    """

    text: str
    guards: frozenset[str]
    alone: bool


_STRIPPED = re.compile(rf"[\s{_EMOJI}，、：:～~。！？!?；;…,]+|(?<![A-Za-z])\.|\.(?![A-Za-z])")


def clean(value: str) -> str:
    """``value`` (a pattern's group) without the particles, quotation marks, punctuation
    (not a point inside a Latin name: 「Dr.Wang」), ～ or emoji around it, nor a closing
    就行/就好/而已 (「宝宝～」, 「小鱼吧」, 「完赛就行」 → 「宝宝」, 「小鱼」, 「完赛」)."""
    value = _QUOTES.sub("", value)
    value = _STRIPPED.sub("", value)
    return _ENOUGH.sub("", _PARTICLES.sub("", value)) or value


def _normal(body: str) -> str:
    body = _OPENERS.sub("", body.strip())
    return _PARTICLES.sub("", body)


def _spoken(raw: str) -> tuple[str, str, bool]:
    """One clause ``raw`` as read: its body (no opener or trailing particle), what the guard
    searches, and whether it asks the buddy to agree to a name. A doctor's words are read
    without them (「医生说我对青霉素过敏」 is 「我对青霉素过敏」), and a request for a name loses
    its tag (:data:`_CONSENT`: 「你叫我糖糖好不好嘛」 is 「你叫我糖糖」; not 「你叫我什么好呢」,
    where the name is asked)."""
    body = said = _normal(raw)
    doctor = _DOCTOR.match(body)
    if doctor is None:
        said = raw
    else:
        body = said = body[doctor.end() :]
    consent = _CONSENT.match(body)
    if consent is None or _QUESTION.search(consent.group(1)):
        return body, said, False
    return consent.group(1), consent.group(1), True


def _joke(parts: list[str], index: int) -> bool:
    """Whether the part ``index`` of a message cut at its marks (``parts``) takes it back as a
    joke (:data:`_JOKE`), or is 假的 in brackets (:data:`_BRACKETED_JOKE`: 「(假的)」)."""
    if _JOKE.search(parts[index]):
        return True
    bracketed = index > 0 and parts[index - 1].strip()[-1:] in ("(", "（")
    return bracketed and bool(_BRACKETED_JOKE.match(parts[index]))


@lru_cache(maxsize=256)
def clauses(text: str) -> tuple[Clause, ...]:
    """The clauses of ``text`` (a message), in order, each with its marks; empty ones
    (「哈哈哈」, 「～」) are left out."""
    text = _QUOTES.sub("", text)
    parts = _CUT.split(text)
    jokes = [index for index in range(0, len(parts), 2) if _joke(parts, index)]
    # 「叫我大哥，开玩笑的，叫我小吴」: a joke taken back marks what came before it only.
    retracted = all(_RETRACTED.search(parts[index]) for index in jokes)
    joke_end = (jokes[-1] if retracted else len(parts)) if jokes else -1
    if _IRONY.search(text):
        joke_end = len(parts)  # 「堵车我最喜欢了 真开心哦🙂」: irony, the whole message
    found: list[tuple[str, set[str]]] = []
    carried: set[str] = set()  # hypothetical, reported, third_party: on to the sentence's end
    for index in range(0, len(parts), 2):
        if len(found) >= CLAUSES_MAX:
            break
        tail = parts[index + 1] if index + 1 < len(parts) else ""
        for raw in _JOINED.split(_SPACE.sub("", parts[index])):
            body, said, request = _spoken(raw)
            marks = {"joke"} if index <= joke_end or _NUISANCE_LIKED.search(said) else set()
            # 「我妈老跟我爸说 你闭嘴吧」: the words said, not said to the buddy
            quoted = bool(found) and "reported" in found[-1][1] and _SAYS.search(found[-1][0])
            if not quoted and (_SELF.match(body) or _ADDRESSED.match(body)):
                carried.discard("third_party")
            if _ADDRESSED.match(body) and not quoted:
                carried.discard("reported")
            marks |= carried
            if (("？" in tail or "?" in tail) and not request) or _QUESTION.search(said):
                marks.add("question")
            if _HYPOTHETICAL.search(said):
                marks.add("hypothetical")
            if _DENIAL.search(said):
                marks.add("denial")
            if _REPORTED.search(said):
                marks.add("reported")
            if _THIRD.match(body):
                marks.add("third_party")
            if _LAUGHTER.search(said) or _LAUGHTER.search(tail):
                marks.add("laughter")
            carried |= marks & {"hypothetical", "reported", "third_party"}
            if _CORRECTION.match(body) and found and "question" not in found[-1][1]:
                # 「…，不对，是…」: the clause before is taken back (after a question, 不 answers it)
                found[-1][1].add("denial")
            if not body and found and _LAUGHTER.search(raw):
                found[-1][1].add("laughter")  # 「你欠我一个男朋友 哈哈哈」: laughter of its own
            if _SAID_ELSEWHERE.search(body):
                for _, earlier in found:  # 「闭嘴——我冲我家鹦鹉喊的」: said to someone else
                    earlier.add("third_party")
            if _ADOPTED.match(body) and found and _NAMED.search(found[-1][0]):
                found[-1][1].discard("third_party")  # 「朋友都叫我远远，你也这么叫吧」
            if body and len(found) < CLAUSES_MAX:
                found.append((body, marks))
        if any(end in tail for end in _ENDS):
            carried = set()  # the sentence ends
    alone = len(found) == 1
    return tuple(Clause(body, frozenset(marks), alone) for body, marks in found)
