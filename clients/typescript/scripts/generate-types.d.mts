/** The contract the types come from (schema/openapi.yaml). */
export declare const CONTRACT: string;
/** The committed output (src/generated/openapi.ts). */
export declare const OUTPUT: string;
/** The TypeScript source openapi-typescript makes of the contract. */
export declare function generateTypes(): Promise<string>;
