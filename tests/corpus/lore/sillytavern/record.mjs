// Records which World Info entries SillyTavern's own `checkWorldInfo` activates for the
// scripted chats of turns.json, and writes the result into turns.json.
//
//   node record.mjs <SillyTavern checkout or git dir> [fixture dir]
//
// No SillyTavern code is in this file: public/scripts/world-info.js is read from the
// checkout given (its HEAD), its import lines are pointed at the stand-ins below, and the
// rewritten copy is loaded from a temporary folder. See README.md.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

console.debug = console.log = console.info = () => {};
const [stPath, fixtureArg] = process.argv.slice(2);
if (!stPath) {
    console.error('usage: node record.mjs <SillyTavern checkout> [fixture dir]');
    process.exit(2);
}
const fixture = fixtureArg ?? dirname(fileURLToPath(import.meta.url));

/** A file of the SillyTavern checkout: from its work tree, else from its HEAD commit. */
function stFile(path) {
    const onDisk = join(stPath, path);
    if (existsSync(onDisk)) return readFileSync(onDisk, 'utf8');
    return execFileSync('git', ['-C', stPath, 'show', `HEAD:${path}`], { encoding: 'utf8', maxBuffer: 1 << 26 });
}

function stCommit() {
    try {
        return execFileSync('git', ['-C', stPath, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    } catch {
        return 'unknown';
    }
}

// ------------------------------------------------------------------ stand-ins

/** Anything: every property, call and construction gives itself (the UI code's jQuery,
 * popups, slash commands, event source…); never a thenable, empty as text. */
const anything = new Proxy(function () {}, {
    get(_, prop) {
        if (prop === 'then') return undefined;
        if (prop === Symbol.toPrimitive) return () => '';
        if (prop === Symbol.iterator) return function* () {};
        return anything;
    },
    apply: () => anything,
    construct: () => anything,
});

/** The chat's metadata, kept in memory across the calls of one chat (timed effects). */
const chatMetadata = {};
/** {{char}} and {{user}} of the chat being played. */
const names = { user: 'User', char: '' };

/** Macros: only {{user}} and {{char}} (case ignored), the ones the books use. */
function substituteParams(text) {
    if (typeof text !== 'string') return text;
    return text.replace(/\{\{user\}\}/gi, names.user).replace(/\{\{char\}\}/gi, names.char);
}

/** A number identifying a string (SillyTavern hashes each entry's JSON to find it again). */
function stringHash(text) {
    return Number.parseInt(createHash('sha256').update(String(text)).digest('hex').slice(0, 13), 16);
}

/** A regular expression's special characters escaped. */
function escapeRegexChars(text) {
    return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** Tokens as SillyTavern counts them without a tokenizer: characters / 3.35, rounded up. */
async function tokenCount(text) {
    return Math.ceil(String(text ?? '').length / 3.35);
}

class CloneMap extends Map {
    constructor() {
        super();
    }

    get(key) {
        const value = super.get(key);
        return value === undefined ? value : structuredClone(value);
    }
}

const books = {};

const overrides = {
    '../script.js': {
        substituteParams,
        chat_metadata: chatMetadata,
        this_chid: undefined,
        characters: [],
        extension_prompt_roles: { SYSTEM: 0, USER: 1, ASSISTANT: 2 },
        getExtensionPromptByName: () => '',
        getRequestHeaders: () => ({}),
    },
    './utils.js': {
        debounce: (fn) => fn,
        escapeRegex: escapeRegexChars,
        getStringHash: stringHash,
        getCharaFilename: () => '',
    },
    './extensions.js': {
        extension_settings: { note: {} },
        getContext: () => ({ extensionPrompts: {}, tagMap: {}, chat: [], characters: [], tags: [] }),
    },
    './authors-note.js': { shouldWIAddPrompt: false, NOTE_MODULE_NAME: '2_floating_prompt', metadata_keys: {} },
    './tokenizers.js': { getTokenCountAsync: tokenCount },
    './constants.js': { debounce_timeout: { quick: 100, short: 200, standard: 300, relaxed: 1000, extended: 5000 } },
    './tags.js': { getTagKeyForEntity: () => undefined },
    './extensions/regex/engine.js': { getRegexedString: (text) => text, regex_placement: { WORLD_INFO: 5 } },
    './util/StructuredCloneMap.js': { StructuredCloneMap: CloneMap },
};

globalThis.__stStub = (from, name) => {
    const module = overrides[from] ?? {};
    return Object.hasOwn(module, name) ? module[name] : anything;
};
globalThis.$ = () => anything;
globalThis.jQuery = () => anything;
globalThis.toastr = anything;
globalThis.localStorage = { getItem: () => null, setItem: () => {} };
globalThis.fetch = async (url, init) => {
    if (url === '/api/worldinfo/get') {
        const { name } = JSON.parse(init.body);
        const book = books[name];
        return { ok: !!book, json: async () => structuredClone(book) };
    }
    return { ok: false, json: async () => ({}) };
};

/** world-info.js with each `import { a, b } from 'x'` made `const a = __stStub('x', 'a')…`. */
function rewritten(source) {
    let count = 0;
    const out = source.replace(/^import\s*\{([^}]*)\}\s*from\s*'([^']+)';\s*$/gm, (_, list, from) => {
        count++;
        return list
            .split(',')
            .map((n) => n.trim())
            .filter(Boolean)
            .map((n) => {
                const [imported, local] = n.split(/\s+as\s+/);
                return `const ${local ?? imported} = globalThis.__stStub(${JSON.stringify(from)}, ${JSON.stringify(imported)});`;
            })
            .join(' ');
    });
    if (/^import\s/m.test(out) || count === 0) throw new Error('an import line was not rewritten');
    return out;
}

// ------------------------------------------------------------------ the run

/** Math.random, seeded (mulberry32), so a run is repeatable. */
function seeded(seed) {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

const POSITIONS = ['before', 'after', 'an_top', 'an_bottom', 'depth', 'em_top', 'em_bottom'];
const ROLES = ['system', 'user', 'assistant'];
const CONTEXT = 1_000_000_000; // the budget (25% of it) never binds

const folder = mkdtempSync(join(tmpdir(), 'st-wi-'));
const moduleFile = join(folder, 'world-info.mjs');
writeFileSync(moduleFile, rewritten(stFile('public/scripts/world-info.js')));
const wi = await import(pathToFileURL(moduleFile).href);

const settings = JSON.parse(stFile('default/content/settings.json')).world_info_settings;
const script = JSON.parse(readFileSync(join(fixture, 'turns.json'), 'utf8'));
for (const chat of script.chats) {
    books[chat.book] = JSON.parse(readFileSync(join(fixture, chat.book), 'utf8'));
}
wi.setWorldInfoSettings(structuredClone(settings), { world_names: Object.keys(books) });

/** The activated entries as the prompt has them: each position's in its order. */
function placed(result) {
    // The prompt lists entries by `order`, lower first; of equal orders the one activated
    // last comes first (a stable sort, highest first, then each put at the front).
    const activated = [...result.allActivatedEntries];
    const ordered = activated
        .map((entry, index) => ({ entry, index }))
        .sort((a, b) => a.entry.order - b.entry.order || b.index - a.index)
        .map((x) => x.entry);
    const out = [];
    for (const entry of ordered) {
        const position = POSITIONS[entry.position] ?? `unknown ${entry.position}`;
        const item = { uid: entry.uid, comment: entry.comment ?? '', position };
        if (position === 'depth') {
            item.depth = entry.depth ?? 4;
            item.role = ROLES[entry.role ?? 0];
        }
        out.push(item);
    }
    out.sort((a, b) => POSITIONS.indexOf(a.position) - POSITIONS.indexOf(b.position));
    // Checked against what the prompt got: the text before and after, the depth messages.
    const text = (p) => ordered.filter((e) => POSITIONS[e.position] === p).map((e) => e.content).join('\n');
    if (text('before') !== result.worldInfoBefore || text('after') !== result.worldInfoAfter) {
        throw new Error('the order derived is not the prompt\'s');
    }
    for (const group of result.WIDepthEntries) {
        const mine = ordered.filter((e) => POSITIONS[e.position] === 'depth' && (e.depth ?? 4) === group.depth && (e.role ?? 0) === group.role);
        if (mine.map((e) => e.content).join('\n') !== group.entries.join('\n')) {
            throw new Error('the order derived is not the depth messages\'');
        }
    }
    return out;
}

let turns = 0;
for (const chat of script.chats) {
    for (const key of Object.keys(chatMetadata)) delete chatMetadata[key];
    chatMetadata.world_info = chat.book; // the chat's lorebook
    names.char = chat.char;
    names.user = chat.user;
    Math.random = seeded(script.seed ?? 1);
    const messages = [];
    for (const turn of chat.turns) {
        messages.push({ name: chat.user, mes: turn.user });
        const scanned = messages.map((m) => (settings.world_info_include_names ? `${m.name}: ${m.mes}` : m.mes)).reverse();
        const result = await wi.checkWorldInfo(scanned, CONTEXT, false);
        turn.st = placed(result);
        messages.push({ name: chat.char, mes: turn.reply });
        turns++;
    }
}
script.recorded = {
    sillytavern: stCommit(),
    settings,
    max_context: CONTEXT,
    random_seed: script.seed ?? 1,
};
writeFileSync(join(fixture, 'turns.json'), JSON.stringify(script, null, 2) + '\n');
process.stdout.write(`recorded ${turns} turns of ${script.chats.length} chats\n`);
