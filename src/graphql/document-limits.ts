import { GraphQLError, parse, type DocumentNode, type ParseOptions } from 'graphql';

/** Longest GraphQL document (the `query` text) accepted on any door, in UTF-8 bytes. */
export const MAX_DOCUMENT_BYTES = 16 * 1024;
/** Most lexical tokens graphql-js reads before it gives up (`parse`'s `maxTokens`). */
export const MAX_DOCUMENT_TOKENS = 5000;
/**
 * Deepest nesting of `{`, `[` and `(` in a document. graphql-js parses recursively: about 1,500
 * nested list brackets already overflow the stack (a RangeError, answered as an internal error),
 * long before any token or byte limit would stop it. Selections are limited to a depth of 8 by
 * validation; this only bounds what the parser has to survive.
 */
export const MAX_DOCUMENT_NESTING = 64;

/** What graphql-js `parse` is given on every door. */
export const PARSE_OPTIONS: ParseOptions = { maxTokens: MAX_DOCUMENT_TOKENS };

/**
 * Why a document is refused before it is parsed, if it is: too long, or nested too deeply. A
 * linear scan that skips strings, block strings and comments the way the GraphQL lexer does.
 */
export function documentProblem(source: string): string | undefined {
  if (source.length > MAX_DOCUMENT_BYTES || Buffer.byteLength(source, 'utf8') > MAX_DOCUMENT_BYTES) {
    return `GraphQL document is larger than ${MAX_DOCUMENT_BYTES} bytes`;
  }
  let depth = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source.charCodeAt(i);
    if (c === 0x23) {
      // # comment: to the end of the line
      while (i < source.length && source.charCodeAt(i) !== 0x0a && source.charCodeAt(i) !== 0x0d) i++;
    } else if (c === 0x22) {
      if (source.startsWith('"""', i)) {
        const end = blockStringEnd(source, i + 3);
        i = end < 0 ? source.length : end + 2;
      } else {
        // "…": backslash escapes; ends at the quote or the line's end (an unterminated string is the parser's error)
        for (i++; i < source.length; i++) {
          const d = source.charCodeAt(i);
          if (d === 0x5c) i++;
          else if (d === 0x22 || d === 0x0a || d === 0x0d) break;
        }
      }
    } else if (c === 0x7b || c === 0x5b || c === 0x28) {
      if (++depth > MAX_DOCUMENT_NESTING) return `GraphQL document nests brackets deeper than ${MAX_DOCUMENT_NESTING} levels`;
    } else if (c === 0x7d || c === 0x5d || c === 0x29) {
      depth--;
    }
  }
  return undefined;
}

/** Index of the closing `"""` of a block string whose content starts at `from` (`\"""` escapes one), or -1. */
function blockStringEnd(source: string, from: number): number {
  for (let i = from; i < source.length; i++) {
    if (source.charCodeAt(i) === 0x5c && source.startsWith('\\"""', i)) i += 3;
    else if (source.startsWith('"""', i)) return i;
  }
  return -1;
}

/** The error a refused document answers with: a syntax error (400), never an internal one. */
export function documentError(message: string): GraphQLError {
  return new GraphQLError(`Syntax Error: ${message}.`, { extensions: { code: 'GRAPHQL_PARSE_FAILED', statusCode: 400 } });
}

/**
 * Parses a client's document within the limits above; a refused or malformed document throws a
 * GraphQLError (code GRAPHQL_PARSE_FAILED), nothing else.
 */
export function parseDocument(source: string): DocumentNode {
  const problem = documentProblem(source);
  if (problem) throw documentError(problem);
  try {
    return parse(source, PARSE_OPTIONS);
  } catch (err) {
    if (err instanceof GraphQLError) throw err;
    throw documentError('GraphQL document could not be parsed');
  }
}
