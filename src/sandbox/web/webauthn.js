// WebAuthn's JSON forms for the wallet-app page: the gateway answers options with base64url
// strings (passkeyRegistrationOptions, approvalChallenge) and takes credentials back as JSON
// (registerPasskey, approvePaymentRequest's passkey). The browser's own converters
// (PublicKeyCredential.parse*OptionsFromJSON, credential.toJSON) where it has them, these
// small ones where it does not.

/** base64url → ArrayBuffer. */
export function fromBase64url(text) {
  const base64 = text.replace(/-/g, '+').replace(/_/g, '/');
  const binary = atob(base64 + '='.repeat((4 - (base64.length % 4)) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes.buffer;
}

/** ArrayBuffer (or view) → base64url without padding. */
export function toBase64url(buffer) {
  const bytes = buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const descriptors = (list) => (list ?? []).map((c) => ({ ...c, id: fromBase64url(c.id) }));

/** Creation options JSON → what navigator.credentials.create takes as `publicKey`. */
export function creationOptions(json) {
  if (typeof PublicKeyCredential.parseCreationOptionsFromJSON === 'function') return PublicKeyCredential.parseCreationOptionsFromJSON(json);
  return {
    ...json,
    challenge: fromBase64url(json.challenge),
    user: { ...json.user, id: fromBase64url(json.user.id) },
    excludeCredentials: descriptors(json.excludeCredentials),
  };
}

/** Request options JSON → what navigator.credentials.get takes as `publicKey`. */
export function requestOptions(json) {
  if (typeof PublicKeyCredential.parseRequestOptionsFromJSON === 'function') return PublicKeyCredential.parseRequestOptionsFromJSON(json);
  return { ...json, challenge: fromBase64url(json.challenge), allowCredentials: descriptors(json.allowCredentials) };
}

/** A PublicKeyCredential (registration or assertion) → its JSON form. */
export function credentialJSON(credential) {
  if (typeof credential.toJSON === 'function') return credential.toJSON();
  const r = credential.response;
  const response = { clientDataJSON: toBase64url(r.clientDataJSON) };
  if (r.attestationObject) {
    response.attestationObject = toBase64url(r.attestationObject);
    response.transports = typeof r.getTransports === 'function' ? r.getTransports() : [];
  } else {
    response.authenticatorData = toBase64url(r.authenticatorData);
    response.signature = toBase64url(r.signature);
    if (r.userHandle) response.userHandle = toBase64url(r.userHandle);
  }
  return {
    id: credential.id,
    rawId: toBase64url(credential.rawId),
    type: credential.type,
    response,
    clientExtensionResults: credential.getClientExtensionResults(),
    authenticatorAttachment: credential.authenticatorAttachment ?? undefined,
  };
}
