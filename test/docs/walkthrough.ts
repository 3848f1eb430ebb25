/**
 * The docs' walk-throughs as tests (issue 33): every ```sh block of README.md and docs/*.md is
 * marked in the markdown, on the line before it, either
 *
 *   <!-- walkthrough: NAME -->        run, in order with the other blocks of NAME, in one shell
 *   <!-- not run: REASON -->           shown only (e.g. it starts the gateway, or waits 5 minutes)
 *
 * A block is cut into statements (a line and its `\` continuations, or a `name() { … }`
 * function); a comment that starts with `{` or `[` after a statement (`# {"status":…}`, or on the
 * statement's own line) is the answer the reader is told to expect, written with `…` for what
 * they will see differ: `{"id":"466b…","status":"PENDING",…}`. `expectedShape` reads such a
 * comment and `matchShape` compares an answer with it: keys and literal values as written, ids,
 * dates, tokens and links by their format, and no key the docs do not show unless the object
 * says `…`.
 */

/** A shell block of a page, with its marker. */
export interface ShellBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The walk-through it belongs to, or undefined when it is not run. */
  walkthrough?: string;
  /** Why it is not run (`<!-- not run: … -->`). */
  notRun?: string;
  text: string;
}

/** One command of a block and the answers its comments promise (as written, before parsing). */
export interface Statement {
  line: number;
  command: string;
  expected: string[];
}

const MARK_RUN = /^<!--\s*walkthrough:\s*([\w-]+)\s*-->$/;
const MARK_NOT_RUN = /^<!--\s*not run:\s*(.+?)\s*-->$/;

/** Every ```sh / ```bash block of a markdown text with the marker on the line before it (if any). */
export function shellBlocks(file: string, markdown: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    if (fence[1] === 'sh' || fence[1] === 'bash') {
      const before = (lines[i - 1] ?? '').trim();
      const run = MARK_RUN.exec(before);
      const notRun = MARK_NOT_RUN.exec(before);
      blocks.push({ file, line: i + 1, walkthrough: run?.[1], notRun: notRun?.[1], text: lines.slice(i + 1, end).join('\n') });
    }
    i = end;
  }
  return blocks;
}

/** Where a `#` comment starts on a command line (outside quotes, after a space), or -1. */
function commentStart(line: string): number {
  let single = false;
  let double = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '\\' && !single) {
      i++;
      continue;
    }
    if (c === "'" && !double) single = !single;
    else if (c === '"' && !single) double = !double;
    else if (c === '#' && !single && !double && (i === 0 || /\s/.test(line[i - 1]!))) return i;
  }
  return -1;
}

/** Whether a JSON-like text has closed every `{` and `[` it opened (strings skipped). */
function balanced(text: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return depth <= 0;
}

/** The statements of a block, each with the answers its comments promise. */
export function statements(block: ShellBlock): Statement[] {
  const lines = block.text.split('\n');
  const out: Statement[] = [];
  let i = 0;
  const expect = (first: string): void => {
    // A promised answer, continued on the following comment lines until its brackets close.
    let text = first;
    while (!balanced(text) && i < lines.length && /^\s*#/.test(lines[i]!)) text += '\n' + lines[i++]!.replace(/^\s*#\s?/, '');
    const last = out.at(-1);
    if (!last) throw new Error(`${block.file}:${block.line}: an expected answer before any command`);
    last.expected.push(text);
  };
  while (i < lines.length) {
    const line = lines[i]!;
    if (!line.trim()) {
      i++;
      continue;
    }
    if (/^\s*#/.test(line)) {
      i++;
      const comment = line.replace(/^\s*#\s?/, '').trim();
      if (/^[[{]/.test(comment)) expect(comment);
      continue;
    }
    const start = i;
    const command: string[] = [];
    if (/^\s*[\w-]+\(\)\s*\{\s*(#.*)?$/.test(line)) {
      // A function over several lines: up to its closing brace at the start of a line.
      while (i < lines.length && !/^\}/.test(lines[i]!)) command.push(lines[i++]!);
      command.push(lines[i++] ?? '}');
    } else {
      command.push(line);
      while (/\\$/.test(lines[i]!) && i + 1 < lines.length) command.push(lines[++i]!);
      i++;
    }
    const lastLine = command.at(-1)!;
    const hash = commentStart(lastLine);
    let inline: string | undefined;
    if (hash >= 0) {
      const comment = lastLine.slice(hash + 1).trim();
      if (/^[[{]/.test(comment)) inline = comment;
    }
    out.push({ line: block.line + 1 + start, command: command.join('\n'), expected: [] });
    if (inline) expect(inline);
  }
  return out;
}

// ---------------------------------------------------------------- the shape of a promised answer

/** What a documented answer promises. */
export type Shape =
  | { kind: 'object'; keys: Array<[string, Shape]>; open: boolean }
  | { kind: 'array'; items: Shape[]; open: boolean }
  | { kind: 'string'; text: string }
  | { kind: 'literal'; value: number | boolean | null }
  | { kind: 'any' };

const ELLIPSIS = '…';

/** Reads a documented answer: JSON with `…` for elided keys, items, values or parts of strings; text after it is ignored. */
export function expectedShape(text: string): Shape {
  let i = 0;
  const ws = (): void => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const fail = (what: string): never => {
    throw new Error(`cannot read the documented answer at ${i} (${what}): ${text}`);
  };
  const str = (): string => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (): Shape => {
    ws();
    const c = text[i];
    if (c === ELLIPSIS) {
      i++;
      return { kind: 'any' };
    }
    if (c === '"') return { kind: 'string', text: str() };
    if (c === '{') {
      i++;
      const keys: Array<[string, Shape]> = [];
      let open = false;
      for (;;) {
        ws();
        if (text[i] === '}') break;
        if (text[i] === ELLIPSIS) {
          i++;
          open = true;
        } else {
          if (text[i] !== '"') fail('a key');
          const key = str();
          ws();
          if (text[i++] !== ':') fail('a colon');
          keys.push([key, value()]);
        }
        ws();
        if (text[i] === ',') i++;
        else if (text[i] !== '}') fail('a comma or }');
      }
      i++;
      return { kind: 'object', keys, open };
    }
    if (c === '[') {
      i++;
      const items: Shape[] = [];
      let open = false;
      for (;;) {
        ws();
        if (text[i] === ']') break;
        if (text[i] === ELLIPSIS) {
          i++;
          open = true;
        } else items.push(value());
        ws();
        if (text[i] === ',') i++;
        else if (text[i] !== ']') fail('a comma or ]');
      }
      i++;
      return { kind: 'array', items, open };
    }
    const literal = /^(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i));
    if (!literal) return fail('a value');
    i += literal[1]!.length;
    return { kind: 'literal', value: JSON.parse(literal[1]!) as number | boolean | null };
  };
  return value();
}

/**
 * Values that differ on every run (ids, times, tokens, links): compared by their format. Every
 * other value is compared as written.
 */
const GENERATED = new Set([
  'id',
  'paymentRequestId',
  'transactionId',
  'walletId',
  'developerId',
  'keyId',
  'secretKey',
  'userToken',
  'token',
  'pin',
  'eventId',
  'payoutId',
  'expiresAt',
  'createdAt',
  'updatedAt',
  'paidAt',
  'periodStart',
  'periodEnd',
  'paymentUrl',
  'paymentReference',
  'consentReceipt',
  'x',
  'kid',
  'secret',
  'bytes',
]);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** The format of a generated value: what stays the same from one run to the next. */
function formatOf(s: string): string {
  if (UUID.test(s)) return 'uuid';
  if (ISO.test(s)) return 'date-time';
  const url = /^(https?:\/\/.*\/)[^/]+$/.exec(s);
  if (url) return `url ${url[1]}`;
  const prefix = /^([a-z]+_|[A-Z]{2,}(?=\d)|eyJ)/.exec(s);
  if (prefix) return `prefix ${prefix[1]}`;
  return 'string';
}

/** Differences between an answer and the documented shape (none when it matches), each with its JSON path. */
export function matchShape(actual: unknown, shape: Shape, path = '$', key = ''): string[] {
  const where = `${path}: `;
  switch (shape.kind) {
    case 'any':
      return [];
    case 'literal':
      if (shape.value === null) return actual === null ? [] : [`${where}expected null, got ${JSON.stringify(actual)}`];
      if (GENERATED.has(key)) return typeof actual === typeof shape.value ? [] : [`${where}expected a ${typeof shape.value}, got ${JSON.stringify(actual)}`];
      return actual === shape.value ? [] : [`${where}expected ${JSON.stringify(shape.value)}, got ${JSON.stringify(actual)}`];
    case 'string': {
      if (typeof actual !== 'string') return [`${where}expected a string like ${JSON.stringify(shape.text)}, got ${JSON.stringify(actual)}`];
      if (shape.text.includes(ELLIPSIS)) {
        const pieces = shape.text.split(ELLIPSIS);
        if (GENERATED.has(key)) {
          // Only a fixed prefix (evt_…, WPAY…, eyJ…) says anything about a generated value.
          const first = pieces[0]!;
          return /^([a-z]+_|[A-Z]+|eyJ[A-Za-z]*)$/.test(first) && !actual.startsWith(first) ? [`${where}expected ${JSON.stringify(shape.text)}, got ${JSON.stringify(actual)}`] : [];
        }
        // The written parts, in order (the first at the start, the last at the end).
        let at = 0;
        for (const [n, piece] of pieces.entries()) {
          const found = n === 0 ? (actual.startsWith(piece) ? 0 : -1) : actual.indexOf(piece, at);
          if (found < 0 || (n === pieces.length - 1 && piece && !actual.endsWith(piece))) return [`${where}expected ${JSON.stringify(shape.text)}, got ${JSON.stringify(actual)}`];
          at = found + piece.length;
        }
        return [];
      }
      if (GENERATED.has(key)) {
        return formatOf(actual) === formatOf(shape.text) ? [] : [`${where}expected the format of ${JSON.stringify(shape.text)} (${formatOf(shape.text)}), got ${JSON.stringify(actual)}`];
      }
      return actual === shape.text ? [] : [`${where}expected ${JSON.stringify(shape.text)}, got ${JSON.stringify(actual)}`];
    }
    case 'array': {
      if (!Array.isArray(actual)) return [`${where}expected an array, got ${JSON.stringify(actual)}`];
      if (shape.open ? actual.length < shape.items.length : actual.length !== shape.items.length) {
        return [`${where}expected ${shape.open ? 'at least ' : ''}${shape.items.length} items, got ${actual.length}: ${JSON.stringify(actual)}`];
      }
      return shape.items.flatMap((item, n) => matchShape(actual[n], item, `${path}[${n}]`, key));
    }
    case 'object': {
      if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return [`${where}expected an object, got ${JSON.stringify(actual)}`];
      const record = actual as Record<string, unknown>;
      const problems: string[] = [];
      for (const [k, s] of shape.keys) {
        if (!(k in record)) problems.push(`${path}.${k}: missing (documented as ${JSON.stringify(s.kind === 'string' ? s.text : s.kind === 'literal' ? s.value : s.kind)})`);
        else problems.push(...matchShape(record[k], s, `${path}.${k}`, k));
      }
      if (!shape.open) {
        const documented = new Set(shape.keys.map(([k]) => k));
        const extra = Object.keys(record).filter((k) => !documented.has(k));
        if (extra.length) problems.push(`${where}keys the docs do not show (add them, or "…"): ${extra.join(', ')}`);
      }
      return problems;
    }
  }
}

/**
 * What every answer must be when the docs promise none: not an error. A JSON answer with a
 * `statusCode` of 400 or more, or GraphQL `errors`, is one.
 */
export function errorIn(output: string): string | undefined {
  const text = output.trim();
  if (!/^[[{]/.test(text)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { statusCode?: unknown; errors?: unknown };
  if (typeof v.statusCode === 'number' && v.statusCode >= 400) return text;
  if (Array.isArray(v.errors) && v.errors.length) return text;
  return undefined;
}
