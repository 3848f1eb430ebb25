// The wallet-app page (GET /app, development only): a stand-in for the wallet's mobile app.
// Signs in through the development-only POST /app/session, reads the wallet and the pending
// requests over GraphQL, receives new ones live over graphql-ws and answers them with the real
// mutations: "Pay" asks for the transaction PIN on a PIN pad, "Pay with passkey" runs a WebAuthn
// ceremony over a challenge bound to the request. Bundled by src/sandbox/build-web.mjs into
// dist/web/app.js (no CDN, no inline code).
import { createClient } from 'graphql-ws';
import { credentialJSON, creationOptions, requestOptions } from './webauthn.js';

const TOKEN_KEY = 'wallet-app-token';
const REQUEST_FIELDS = 'id amount currency description merchantName status createdAt expiresAt updatedAt transactionId';
/** What the subscriptions carry: a new request's fields, and a status change. */
const NOTIFICATION_FIELDS = 'id amount currency description merchantName status createdAt expiresAt';
const UPDATE_FIELDS = 'id status updatedAt transactionId';
const PIN_MIN = 4;
const PIN_MAX = 6;

/** Words for the error codes a person can meet here. */
const ERROR_WORDS = {
  INSUFFICIENT_FUNDS: 'Not enough money in your wallet to pay this.',
  PAYMENT_REQUEST_EXPIRED: 'This request has expired; it can no longer be paid.',
  PAYMENT_REQUEST_NOT_PENDING: 'This request was already decided.',
  WALLET_NOT_ACTIVE: 'Your wallet is not active, so it cannot pay.',
  UNAUTHENTICATED: 'Your session has ended; please sign in again.',
  NOT_FOUND: 'This request no longer exists.',
  RATE_LIMITED: 'Too many attempts; wait a moment and try again.',
};
// VERIFICATION_FAILED and VERIFICATION_LOCKED are said in the gateway's own words: they count the
// attempts left and say how long a lock lasts.

const STATUS_WORDS = {
  PENDING: 'Waiting',
  APPROVED: 'Paid',
  REJECTED: 'Rejected',
  EXPIRED: 'Expired',
  CANCELLED: 'Cancelled by the merchant',
};

const $ = (id) => document.getElementById(id);

/** The page's state: the session, the wallet and one entry per request shown. */
const state = {
  token: sessionStorage.getItem(TOKEN_KEY),
  wallet: null,
  /** id → { request, element, decided } */
  requests: new Map(),
  /** The user's passkeys (myPasskeys). */
  passkeys: [],
  ws: null,
  ticker: null,
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

const AMOUNT_FORMAT = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** An amount without its currency, the same everywhere: `1,234.50`. */
function amountText(amount) {
  return AMOUNT_FORMAT.format(Number(amount));
}

/** The one money format of the page: `ETB 1,234.50` (code first, two decimals, whatever the browser's locale). */
function money(amount, currency) {
  return `${currency} ${amountText(amount)}`;
}

const TIME_FORMAT = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });

/** Error body or GraphQL error → words for a person. */
function words(error) {
  const code = error?.extensions?.code;
  return (code && ERROR_WORDS[code]) || error?.message || 'Something went wrong; please try again.';
}

class GraphQLRequestError extends Error {
  constructor(error) {
    super(words(error));
    this.code = error?.extensions?.code;
  }
}

async function graphql(query, variables = {}) {
  const res = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${state.token}` },
    body: JSON.stringify({ query, variables }),
  });
  let body;
  try {
    body = await res.json();
  } catch {
    throw new GraphQLRequestError({ message: `The gateway answered ${res.status}.` });
  }
  if (body.errors?.length) {
    const err = new GraphQLRequestError(body.errors[0]);
    if (err.code === 'UNAUTHENTICATED') signOut(err.message);
    throw err;
  }
  return body.data;
}

// ---------------------------------------------------------------- sign-in

async function signIn(username) {
  const error = $('signin-error');
  error.hidden = true;
  const res = await fetch('/app/session', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username }),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    error.textContent = res.status === 404 ? `There is no user "${username}".` : body.message || `Sign-in failed (${res.status}).`;
    error.hidden = false;
    return;
  }
  state.token = body.token;
  sessionStorage.setItem(TOKEN_KEY, body.token);
  await start();
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  state.wallet = null;
  state.ws?.dispose();
  state.ws = null;
  for (const { element } of state.requests.values()) element.remove();
  state.requests.clear();
  state.passkeys = [];
  closePinPad();
  $('passkeys').replaceChildren();
  $('blocked').replaceChildren();
  $('wallet').hidden = true;
  $('live').hidden = true;
  $('signin').hidden = false;
  $('recent-title').hidden = true;
  if (message) {
    $('signin-error').textContent = message;
    $('signin-error').hidden = false;
  }
}

// ---------------------------------------------------------------- wallet and requests

function showWallet(wallet) {
  state.wallet = wallet;
  $('who').textContent = wallet.username;
  $('balance').textContent = amountText(wallet.balance);
  $('currency').textContent = wallet.currency;
  $('wallet-status').textContent = wallet.status === 'ACTIVE' ? '' : `Wallet ${wallet.status.toLowerCase()}`;
  showAvailable(wallet);
}

async function refreshWallet() {
  const data = await graphql('{ myWallet { walletId username status balance availableBalance currency } }');
  showWallet(data.myWallet);
}

function countdown(expiresAt) {
  const left = Math.max(0, Math.ceil((new Date(expiresAt).getTime() - Date.now()) / 1000));
  return { left, text: `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}` };
}

/** WebAuthn needs a domain name: on an IP address (127.0.0.1) the browser refuses every ceremony. */
const onIpAddress = () => /^[\d.]+$|^\[/.test(location.hostname);
const canUsePasskeys = () => typeof window.PublicKeyCredential === 'function' && !!navigator.credentials && !onIpAddress();

/** Builds the card of a request (all text through textContent). */
function card(request) {
  const li = el('li', 'request');
  li.dataset.id = request.id;
  li.dataset.status = request.status;
  const head = el('div', 'request-head');
  head.append(el('span', 'merchant', request.merchantName), el('span', 'status', STATUS_WORDS[request.status] ?? request.status));
  const amount = el('div', 'request-amount', money(request.amount, request.currency));
  const description = el('div', 'description', request.description);
  const timer = el('div', 'expires');
  const error = el('p', 'error');
  error.setAttribute('role', 'alert');
  error.hidden = true;
  const actions = el('div', 'actions');
  const reject = el('button', 'reject', 'Reject');
  const approve = el('button', 'approve primary', `Pay ${money(request.amount, request.currency)}`);
  const passkey = el('button', 'passkey', 'Pay with passkey');
  reject.type = approve.type = passkey.type = 'button';
  passkey.hidden = !(canUsePasskeys() && state.passkeys.length > 0);
  reject.addEventListener('click', () => rejectRequest(request.id));
  approve.addEventListener('click', () => openPinPad(request.id, approve));
  passkey.addEventListener('click', () => payWithPasskey(request.id));
  actions.append(reject, approve, passkey);
  const tools = el('div', 'tools');
  const block = el('button', 'link block', 'Block merchant');
  const report = el('button', 'link report', 'Report');
  block.type = report.type = 'button';
  block.addEventListener('click', () => confirmThen(li, `Block ${request.merchantName}? It will no longer be able to ask you for money.`, 'Block', () => blockMerchant(request.id)));
  report.addEventListener('click', () => confirmThen(li, 'Report this request as unwanted? It will be rejected and our team told.', 'Report', () => reportRequest(request.id)));
  tools.append(block, report);
  const confirm = el('div', 'confirm');
  confirm.hidden = true;
  li.append(head, amount, description, timer, error, actions, tools, confirm);
  return li;
}

/** Asks on the card before an action that cannot be undone there (block, report). */
function confirmThen(li, question, label, action) {
  const box = li.querySelector('.confirm');
  const yes = el('button', 'danger', label);
  const no = el('button', '', 'Cancel');
  yes.type = no.type = 'button';
  const close = () => {
    box.hidden = true;
    box.replaceChildren();
  };
  yes.addEventListener('click', () => {
    close();
    action();
  });
  no.addEventListener('click', close);
  box.replaceChildren(el('p', '', question), yes, no);
  box.hidden = false;
  yes.focus();
}

/** The passkey buttons follow whether the user has a passkey (and the browser can use it). */
function showPasskeyButtons() {
  const show = canUsePasskeys() && state.passkeys.length > 0;
  for (const button of document.querySelectorAll('.request button.passkey')) button.hidden = !show;
}

function render(entry) {
  const { request, element } = entry;
  element.dataset.status = request.status;
  element.querySelector('.status').textContent = STATUS_WORDS[request.status] ?? request.status;
  const timer = element.querySelector('.expires');
  if (request.status === 'PENDING') {
    const { left, text } = countdown(request.expiresAt);
    if (left === 0) {
      // Expired on the clock; the gateway's EXPIRED update follows.
      request.status = 'EXPIRED';
      return render(entry);
    }
    timer.textContent = `Expires in ${text}`;
    timer.classList.toggle('soon', left <= 30);
  } else {
    // A decided request reads as what it was (merchant, description, amount) and when.
    const when = request.updatedAt ? TIME_FORMAT.format(new Date(request.updatedAt)) : '';
    timer.textContent = when ? `${STATUS_WORDS[request.status] ?? request.status} · ${when}` : '';
    timer.classList.remove('soon');
    for (const button of element.querySelectorAll('button')) button.disabled = true;
    element.querySelector('.confirm').hidden = true;
    if (!entry.decided) {
      entry.decided = true;
      $('recent').prepend(element);
      $('recent-title').hidden = false;
    }
  }
  updateCounts();
}

function updateCounts() {
  const pending = [...state.requests.values()].filter((e) => e.request.status === 'PENDING').length;
  $('pending-count').textContent = String(pending);
  $('empty').hidden = pending > 0;
}

function upsert(request) {
  const entry = state.requests.get(request.id);
  if (entry) {
    Object.assign(entry.request, request);
    render(entry);
    return;
  }
  // Something we have not seen but only know the id and status of: nothing to show.
  if (request.merchantName === undefined) return;
  const created = { request: { ...request }, element: card(request), decided: false };
  state.requests.set(request.id, created);
  if (request.status === 'PENDING') $('pending').append(created.element);
  else {
    // Already decided when it arrived (at sign-in): into Recent, in the server's order.
    created.decided = true;
    $('recent').append(created.element);
    $('recent-title').hidden = false;
  }
  render(created);
}

/** Shows an error on a request's card (and the balance when the wallet cannot afford it). */
function cardError(entry, err) {
  const error = entry.element.querySelector('.error');
  error.textContent = err.message;
  if (err.code === 'INSUFFICIENT_FUNDS' && state.wallet) {
    error.textContent = `${err.message} Your balance is ${money(state.wallet.balance, state.wallet.currency)}.`;
  }
  error.hidden = false;
  if (err.code === 'PAYMENT_REQUEST_EXPIRED') upsert({ id: entry.request.id, status: 'EXPIRED' });
}

const APPROVE = 'mutation($id: ID!, $verification: ApprovalVerificationInput!) { approvePaymentRequest(id: $id, verification: $verification) { id status transactionId updatedAt } }';

/** Runs one action of a card with its buttons disabled; errors land on the card. */
async function onCard(id, work) {
  const entry = state.requests.get(id);
  if (!entry) return;
  const buttons = entry.element.querySelectorAll('button');
  entry.element.querySelector('.error').hidden = true;
  for (const button of buttons) button.disabled = true;
  try {
    await work(entry);
  } catch (err) {
    cardError(entry, err);
  } finally {
    if (entry.request.status === 'PENDING') for (const button of buttons) button.disabled = false;
  }
}

async function approved(request) {
  upsert(request);
  await refreshWallet();
}

function rejectRequest(id) {
  return onCard(id, async () => {
    const data = await graphql('mutation($id: ID!) { rejectPaymentRequest(id: $id) { id status updatedAt } }', { id });
    upsert(data.rejectPaymentRequest);
  });
}

// ---------------------------------------------------------------- the PIN pad

/** The open pad: which request, the digits typed so far (only here, never stored or logged), where focus returns. */
const pad = { id: null, digits: '', returnFocus: null, busy: false };

function showDigits() {
  const dots = $('pin-dots');
  const slots = Math.max(PIN_MIN, Math.min(PIN_MAX, pad.digits.length + 1));
  dots.replaceChildren(...Array.from({ length: slots }, (_, i) => el('span', i < pad.digits.length ? 'dot on' : 'dot')));
  dots.setAttribute('aria-label', `${pad.digits.length} of ${PIN_MIN} to ${PIN_MAX} digits entered`);
  $('pin-ok').disabled = pad.busy || pad.digits.length < PIN_MIN;
}

function openPinPad(id, from) {
  const entry = state.requests.get(id);
  if (!entry || entry.request.status !== 'PENDING') return;
  pad.id = id;
  pad.digits = '';
  pad.busy = false;
  pad.returnFocus = from ?? document.activeElement;
  $('pin-for').textContent = `Pay ${money(entry.request.amount, entry.request.currency)} to ${entry.request.merchantName}`;
  $('pin-error').hidden = true;
  showDigits();
  $('pin-pad').hidden = false;
  document.body.classList.add('modal-open');
  $('pin-body').focus();
}

function closePinPad() {
  if (pad.id === null) return;
  pad.id = null;
  pad.digits = '';
  showDigits();
  $('pin-pad').hidden = true;
  document.body.classList.remove('modal-open');
  const back = pad.returnFocus;
  pad.returnFocus = null;
  if (back && document.contains(back) && !back.disabled) back.focus();
}

function pinKey(key) {
  if (pad.id === null || pad.busy) return;
  if (/^[0-9]$/.test(key)) {
    if (pad.digits.length < PIN_MAX) pad.digits += key;
    $('pin-error').hidden = true;
  } else if (key === 'Backspace') {
    pad.digits = pad.digits.slice(0, -1);
  } else if (key === 'Enter') {
    if (pad.digits.length >= PIN_MIN) submitPin();
    return;
  } else if (key === 'Escape') {
    closePinPad();
    return;
  } else return;
  showDigits();
}

async function submitPin() {
  const id = pad.id;
  const pin = pad.digits;
  pad.digits = '';
  pad.busy = true;
  showDigits();
  try {
    const data = await graphql(APPROVE, { id, verification: { pin } });
    pad.busy = false;
    closePinPad();
    await approved(data.approvePaymentRequest);
  } catch (err) {
    pad.busy = false;
    if (err.code === 'VERIFICATION_FAILED') {
      // Wrong PIN: try again on the pad (the gateway counts the failures).
      $('pin-error').textContent = err.message;
      $('pin-error').hidden = false;
      showDigits();
      $('pin-body').focus();
      return;
    }
    closePinPad();
    const entry = state.requests.get(id);
    if (entry) cardError(entry, err);
  }
}

/** Keeps Tab inside the pad while it is open. */
function trapFocus(event) {
  const focusable = [...$('pin-pad').querySelectorAll('button:not([disabled])')];
  if (focusable.length === 0) return;
  const first = focusable[0];
  const last = focusable[focusable.length - 1];
  if (event.shiftKey && (document.activeElement === first || document.activeElement === $('pin-body'))) {
    event.preventDefault();
    last.focus();
  } else if (!event.shiftKey && document.activeElement === last) {
    event.preventDefault();
    first.focus();
  }
}

// ---------------------------------------------------------------- passkeys

function showPasskeys() {
  const list = $('passkeys');
  list.replaceChildren(
    ...state.passkeys.map((p) => {
      const li = el('li', 'passkey-item');
      const text = el('div', 'grow');
      text.append(el('div', 'name', p.name), el('div', 'muted small', p.lastUsedAt ? `Last used ${TIME_FORMAT.format(new Date(p.lastUsedAt))}` : `Added ${TIME_FORMAT.format(new Date(p.createdAt))}`));
      const remove = el('button', 'link remove', 'Remove');
      remove.type = 'button';
      remove.setAttribute('aria-label', `Remove passkey ${p.name}`);
      remove.addEventListener('click', () => removePasskey(p.id));
      li.append(text, remove);
      return li;
    }),
  );
  if (!canUsePasskeys()) {
    $('add-passkey').disabled = true;
    $('passkey-error').textContent = onIpAddress()
      ? `Passkeys need a domain name: open this page at ${location.protocol}//localhost${location.port ? `:${location.port}` : ''}/app.`
      : 'This browser cannot use passkeys.';
    $('passkey-error').hidden = false;
  }
  showPasskeyButtons();
}

const PASSKEYS_QUERY = 'myPasskeys { id name createdAt lastUsedAt }';

async function loadPasskeys() {
  const data = await graphql(`{ ${PASSKEYS_QUERY} }`);
  state.passkeys = data.myPasskeys;
  showPasskeys();
}

function passkeyError(err) {
  $('passkey-error').textContent = err.message;
  $('passkey-error').hidden = false;
}

/** A WebAuthn ceremony the user cancelled or the browser refused, in words. */
function ceremonyWords(err) {
  if (err?.name === 'NotAllowedError') return 'The passkey request was cancelled or timed out.';
  if (err?.name === 'InvalidStateError') return 'This device already holds one of your passkeys.';
  if (err instanceof GraphQLRequestError) return err.message;
  return 'The browser could not use a passkey here.';
}

async function addPasskey() {
  const button = $('add-passkey');
  $('passkey-error').hidden = true;
  button.disabled = true;
  try {
    const data = await graphql('mutation { passkeyRegistrationOptions }');
    const credential = await navigator.credentials.create({ publicKey: creationOptions(data.passkeyRegistrationOptions) });
    if (!credential) throw new Error('no credential');
    const platform = navigator.userAgentData?.platform || 'this device';
    await graphql('mutation($response: JSONObject!, $name: String) { registerPasskey(response: $response, name: $name) { id } }', {
      response: credentialJSON(credential),
      name: `Passkey on ${platform}`.slice(0, 64),
    });
    await loadPasskeys();
  } catch (err) {
    passkeyError({ message: ceremonyWords(err) });
  } finally {
    button.disabled = !canUsePasskeys();
  }
}

async function removePasskey(id) {
  $('passkey-error').hidden = true;
  try {
    await graphql('mutation($id: ID!) { removePasskey(id: $id) }', { id });
    await loadPasskeys();
  } catch (err) {
    passkeyError(err);
  }
}

function payWithPasskey(id) {
  return onCard(id, async () => {
    let assertion;
    try {
      const data = await graphql('mutation($id: ID!) { approvalChallenge(id: $id) }', { id });
      const credential = await navigator.credentials.get({ publicKey: requestOptions(data.approvalChallenge) });
      if (!credential) throw new Error('no credential');
      assertion = credentialJSON(credential);
    } catch (err) {
      if (err instanceof GraphQLRequestError) throw err;
      throw Object.assign(new Error(ceremonyWords(err)), { code: 'CEREMONY' });
    }
    try {
      const data = await graphql(APPROVE, { id, verification: { passkey: assertion } });
      await approved(data.approvePaymentRequest);
      loadPasskeys().catch(() => undefined); // its last use
    } catch (err) {
      if (err.code === 'VERIFICATION_FAILED') err.message = `${err.message} Try again, or pay with your PIN.`;
      throw err;
    }
  });
}

// ---------------------------------------------------------------- blocked merchants and reports

function showBlocked(blocked) {
  $('blocked-empty').hidden = blocked.length > 0;
  $('blocked').replaceChildren(
    ...blocked.map((b) => {
      const li = el('li', 'blocked-item');
      li.dataset.id = b.id;
      const text = el('div', 'grow');
      text.append(el('div', 'name', b.merchantName), el('div', 'muted small', `Blocked ${TIME_FORMAT.format(new Date(b.blockedAt))}`));
      const unblock = el('button', 'link unblock', 'Unblock');
      unblock.type = 'button';
      unblock.setAttribute('aria-label', `Unblock ${b.merchantName}`);
      unblock.addEventListener('click', () => unblockMerchant(b.id));
      li.append(text, unblock);
      return li;
    }),
  );
}

const BLOCKED_QUERY = 'myBlockedMerchants { id merchantName blockedAt }';

async function loadBlocked() {
  $('blocked-error').hidden = true;
  try {
    const data = await graphql(`{ ${BLOCKED_QUERY} }`);
    showBlocked(data.myBlockedMerchants);
  } catch (err) {
    $('blocked-error').textContent = err.message;
    $('blocked-error').hidden = false;
  }
}

function blockMerchant(id) {
  return onCard(id, async (entry) => {
    await graphql('mutation($id: ID!) { blockMerchant(paymentRequestId: $id) { id merchantName blockedAt } }', { id });
    if (entry.request.status === 'PENDING') upsert({ id, status: 'REJECTED', updatedAt: new Date().toISOString() });
    await loadBlocked();
  });
}

function reportRequest(id) {
  return onCard(id, async () => {
    const data = await graphql('mutation($id: ID!) { reportPaymentRequest(id: $id) { id status updatedAt } }', { id });
    upsert(data.reportPaymentRequest);
  });
}

async function unblockMerchant(id) {
  $('blocked-error').hidden = true;
  try {
    await graphql('mutation($id: ID!) { unblockMerchant(id: $id) }', { id });
  } catch (err) {
    $('blocked-error').textContent = err.message;
    $('blocked-error').hidden = false;
  }
  await loadBlocked();
}

// ---------------------------------------------------------------- loading and live updates

/**
 * Catch-up (at start and after every reconnect): the wallet, everything still pending, what was
 * decided lately (a payment approved elsewhere shows), the passkeys and the blocked merchants.
 */
async function load() {
  // One round trip: the page is quiet once it is answered.
  const data = await graphql(
    `{ myWallet { walletId username status balance availableBalance currency } myPendingPaymentRequests { ${REQUEST_FIELDS} } myRecentPaymentRequests(limit: 10) { ${REQUEST_FIELDS} } ${PASSKEYS_QUERY} ${BLOCKED_QUERY} }`,
  );
  showWallet(data.myWallet);
  for (const request of data.myPendingPaymentRequests) upsert(request);
  for (const request of data.myRecentPaymentRequests) upsert(request);
  state.passkeys = data.myPasskeys;
  showPasskeys();
  showBlocked(data.myBlockedMerchants);
}

/** A status change of a request this page has not shown: its details from the server, into Recent. */
async function loadRecent() {
  const data = await graphql(`{ myRecentPaymentRequests(limit: 10) { ${REQUEST_FIELDS} } }`);
  for (const request of data.myRecentPaymentRequests) upsert(request);
}

function setLive(live) {
  const badge = $('live');
  badge.hidden = false;
  badge.textContent = live ? 'live' : 'reconnecting…';
  badge.classList.toggle('on', live);
}

function connect() {
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
  const token = state.token;
  const client = createClient({
    url,
    connectionParams: () => ({ authorization: `Bearer ${token}` }),
    lazy: false,
    retryAttempts: Infinity,
    shouldRetry: (event) => !(event && typeof event === 'object' && 'code' in event && event.code === 4401),
    on: {
      connected: () => {
        setLive(true);
        load().catch(() => undefined);
      },
      closed: (event) => {
        if (event && event.code === 4401) signOut('Your session has ended; please sign in again.');
        else if (state.ws === client) setLive(false);
      },
    },
  });
  state.ws = client;
  const sink = (field) => ({
    next: (result) => {
      const request = result.data?.[field];
      if (!request) return;
      if (field === 'paymentRequestUpdated' && !state.requests.has(request.id)) loadRecent().catch(() => undefined);
      else upsert(request);
      // Money moved (here or elsewhere): the balance comes from the server.
      if (field === 'paymentRequestUpdated' && request.status === 'APPROVED') refreshWallet().catch(() => undefined);
    },
    error: () => setLive(false),
    complete: () => undefined,
  });
  client.subscribe({ query: `subscription { paymentRequested { ${NOTIFICATION_FIELDS} } }` }, sink('paymentRequested'));
  client.subscribe({ query: `subscription { paymentRequestUpdated { ${UPDATE_FIELDS} } }` }, sink('paymentRequestUpdated'));
}

async function start() {
  $('signin').hidden = true;
  $('waiting').hidden = true;
  $('wallet').hidden = false;
  try {
    await load();
  } catch (err) {
    if (state.token) {
      $('empty').textContent = err.message;
    }
    return;
  }
  connect();
  openLinkFromHash();
  state.ticker ??= setInterval(() => {
    for (const entry of state.requests.values()) if (entry.request.status === 'PENDING') render(entry);
  }, 1000);
}

// ---------------------------------------------------------------- payment links (#25)
// An open request reached by its link (GET /pay/{code} lands here as /app#pay=<code>) or pasted:
// read with paymentRequestByCode and shown as the same card as a pending request. Holds of
// MANUAL payments show as the available balance under the balance.

/** "Available 70.00" under the balance while holds (MANUAL payments not yet captured) reserve part of it. */
function showAvailable(wallet) {
  const shown = typeof wallet.availableBalance === 'number' && wallet.availableBalance !== wallet.balance;
  $('available').hidden = !shown;
  $('available').textContent = shown ? `Available ${money(wallet.availableBalance, wallet.currency)} (the rest is held)` : '';
}

/** The code of a payment link (…/pay/<code>, #pay=<code>) or a bare code; null when it is none. */
function codeOfLink(text) {
  const match = /(?:\/pay\/|#pay=|^)([A-Za-z0-9_-]{16,64})\/?(?:[?#].*)?$/.exec(text.trim());
  return match ? match[1] : null;
}

/** Reads the request of a link's code and shows its card (pending: pay or reject; else its state). */
async function openByCode(code) {
  const data = await graphql(`query($code: String!) { paymentRequestByCode(code: $code) { ${REQUEST_FIELDS} transactionId } }`, { code });
  const request = data.paymentRequestByCode;
  upsert(request);
  state.requests.get(request.id)?.element.scrollIntoView({ block: 'center' });
}

/** /app#pay=<code> (where /pay/<code> sends a development browser): opens it once, then clears the hash. */
function openLinkFromHash() {
  const code = codeOfLink(location.hash);
  if (!code) return;
  history.replaceState(null, '', location.pathname);
  openByCode(code).catch((err) => showLinkError(err));
}

/**
 * Before sign-in, a page opened by a payment link (/app#pay=<code>) says which payment is waiting:
 * the merchant, the amount and what for (GET /app/link/<code>, what the link's holder may see).
 */
async function showWaitingLink() {
  const box = $('waiting');
  const code = codeOfLink(location.hash);
  if (!code) {
    box.hidden = true;
    return;
  }
  const res = await fetch(`/app/link/${encodeURIComponent(code)}`);
  const body = await res.json().catch(() => ({}));
  if (state.wallet) return; // signed in meanwhile: the request's card shows it
  const line = (text, className) => {
    const p = document.createElement('p');
    p.textContent = text;
    if (className) p.className = className;
    return p;
  };
  if (!res.ok) {
    box.replaceChildren(line(res.status === 404 ? 'No payment request for this link.' : body.message || `The link could not be read (${res.status}).`, 'error'));
  } else {
    box.replaceChildren(
      line(`${body.merchantName} asks you to pay`, 'muted'),
      line(money(body.amount, body.currency), 'amount'),
      line(body.description),
      line(body.status === 'PENDING' ? 'Sign in to pay it.' : `This payment request is ${body.status.toLowerCase()}.`, 'muted'),
    );
  }
  box.hidden = false;
}

function showLinkError(err) {
  $('link-error').textContent = err.code === 'NOT_FOUND' ? 'No payment request for this link (or it was paid by someone else).' : words(err);
  $('link-error').hidden = false;
}

// ---------------------------------------------------------------- wiring

document.addEventListener('DOMContentLoaded', () => {
  $('signin-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const username = $('username').value.trim();
    if (username) signIn(username).catch((err) => {
      $('signin-error').textContent = `Sign-in failed: ${err.message}`;
      $('signin-error').hidden = false;
    });
  });
  for (const pick of document.querySelectorAll('.pick')) {
    pick.addEventListener('click', () => {
      $('username').value = pick.dataset.username;
      $('signin-form').requestSubmit();
    });
  }
  $('signout').addEventListener('click', () => signOut());
  $('add-passkey').addEventListener('click', () => addPasskey());
  for (const key of document.querySelectorAll('#pin-pad .key')) {
    // mousedown would move focus away from the pad's body; keep typing going to the pad.
    key.addEventListener('click', () => {
      pinKey(key.dataset.key);
      if (pad.id !== null) $('pin-body').focus();
    });
  }
  $('pin-cancel').addEventListener('click', () => closePinPad());
  $('pin-pad').addEventListener('click', (event) => {
    if (event.target === $('pin-pad')) closePinPad();
  });
  document.addEventListener('keydown', (event) => {
    if (pad.id === null) return;
    if (event.key === 'Tab') return trapFocus(event);
    // Enter or Space on a focused pad button is that button's click; everything else is the PIN.
    if (event.target instanceof HTMLButtonElement && (event.key === 'Enter' || event.key === ' ')) return;
    if (/^[0-9]$/.test(event.key) || event.key === 'Backspace' || event.key === 'Enter' || event.key === 'Escape') {
      event.preventDefault();
      pinKey(event.key);
    }
  });
  $('link-form').addEventListener('submit', (event) => {
    event.preventDefault();
    $('link-error').hidden = true;
    const code = codeOfLink($('link-input').value);
    if (!code) return showLinkError({ message: 'That is not a payment link.' });
    openByCode(code).then(() => ($('link-input').value = ''), showLinkError);
  });
  window.addEventListener('hashchange', () => (state.wallet ? openLinkFromHash() : showWaitingLink().catch(() => undefined)));
  if (state.token) start();
  else showWaitingLink().catch(() => undefined);
});
