import type { GraphQLError } from 'graphql';
import { AppError, describeError, type ErrorReply } from '../errors.js';

const TYPE_WORDS: Record<string, string> = {
  Float: 'a number',
  Int: 'an integer',
  String: 'a string',
  ID: 'a string',
  Boolean: 'a boolean',
};

/**
 * Rewords a GraphQL variable-coercion error (the request did not fit the input type) into a
 * REST client's terms: which field, and what was wrong. Returns undefined for other errors.
 */
export function translateCoercionError(message: string): string | undefined {
  if (!message.startsWith('Variable "$')) return undefined;
  // The client's own key is quoted raw by GraphQL and may hold any character ("callback-url").
  let m = /; Field "([\s\S]*)" is not defined by type "\w+"\.(?: Did you mean [^?]*\?)?$/.exec(message);
  if (m) return `Unknown field ${JSON.stringify(clip(m[1]!))}`;
  m = /Field "(\w+)" of required type "[^"]+" was not provided/.exec(message);
  if (m) return `${m[1]} is required`;
  m = /at "\w+\.(\w+)"; Expected non-nullable type "[^"]+" not to be null/.exec(message);
  if (m) return `${m[1]} must not be null`;
  // A value inside an input object (`at "input.amount"`), or a variable of its own (a query parameter).
  m = /at "\w+\.(\w+)"; (\w+) cannot represent/.exec(message) ?? /^Variable "\$(\w+)" got invalid value [^;]*; (\w+) cannot represent/.exec(message);
  if (m) {
    const word = TYPE_WORDS[m[2]!] ?? `of type ${m[2]}`;
    return m[2] === 'Float' && /non numeric value: (NaN|-?Infinity)/.test(message)
      ? `${m[1]} must be a finite number`
      : `${m[1]} must be ${word}`;
  }
  if (/Expected type "\w+" to be an object/.test(message) || /must not be null/.test(message)) {
    return 'Request body must be a JSON object';
  }
  return 'Invalid request';
}

/** A client-chosen name, shortened for an error message. */
function clip(name: string, max = 64): string {
  return name.length > max ? `${name.slice(0, max)}…` : name;
}

/**
 * The one error a REST call answers with, from the errors of its GraphQL result: what
 * `describeError` says of the first, except that GraphQL's request errors (the body did not fit
 * the input type) are reworded in a REST client's terms and joined.
 */
export function restErrorOf(errors: readonly GraphQLError[]): ErrorReply {
  const reply = describeError(errors[0]);
  if (reply.kind !== 'expected' || reply.cause instanceof AppError) return reply;
  const isRequestError = (e: GraphQLError) => !(describeError(e).cause instanceof AppError) && describeError(e).kind === 'expected';
  const messages = errors.filter(isRequestError).map((e) => translateCoercionError(e.message) ?? 'Invalid request');
  return { ...reply, code: 'BAD_USER_INPUT', statusCode: 400, message: [...new Set(messages)].join('; ') };
}
