import { GraphQLError } from 'graphql';
import { AppError, INTERNAL_MESSAGE } from '../errors.js';

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
  m = /at "\w+\.(\w+)"; (\w+) cannot represent/.exec(message);
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

/** Maps the errors of a GraphQL result to the one error the REST door answers with. */
export function restErrorOf(errors: readonly GraphQLError[]): { statusCode: number; message: string; internal: boolean } {
  const error = errors[0]!;
  const original = error.originalError;
  if (original instanceof AppError) return { statusCode: original.statusCode, message: original.message, internal: false };
  const code = error.extensions?.code;
  const statusCode = error.extensions?.statusCode;
  if (typeof code === 'string' && typeof statusCode === 'number') {
    return { statusCode, message: error.message, internal: false };
  }
  const isRequestError = (e: GraphQLError) => !e.originalError || (e.originalError instanceof GraphQLError && !(e.originalError instanceof AppError));
  if (isRequestError(error)) {
    const messages = errors.filter(isRequestError).map((e) => translateCoercionError(e.message) ?? 'Invalid request');
    return { statusCode: 400, message: [...new Set(messages)].join('; '), internal: false };
  }
  return { statusCode: 500, message: INTERNAL_MESSAGE, internal: true };
}
