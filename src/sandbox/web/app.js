// The wallet-app page (GET /app, development only): a stand-in for the wallet's mobile app.
// Signs in through the development-only POST /app/session, reads the wallet and the pending
// requests over GraphQL, receives new ones live over graphql-ws and answers them with the real
// mutations. Bundled by src/sandbox/build-web.mjs into dist/web/app.js (no CDN, no inline code).
import { createClient } from 'graphql-ws';

const TOKEN_KEY = 'wallet-app-token';
const REQUEST_FIELDS = 'id amount currency description merchantName status createdAt expiresAt';

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
  ws: null,
  ticker: null,
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function money(amount, currency) {
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency, currencyDisplay: 'code' }).format(amount);
  } catch {
    return `${amount.toFixed(2)} ${currency}`;
  }
}

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
  $('balance').textContent = money(wallet.balance, wallet.currency).replace(wallet.currency, '').trim();
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
  // The transaction PIN every approval needs (a plain field for now; the PIN pad comes with the passkeys work).
  const pin = el('input', 'pin');
  Object.assign(pin, { type: 'password', inputMode: 'numeric', autocomplete: 'off', maxLength: 6, placeholder: 'PIN' });
  pin.setAttribute('aria-label', 'Transaction PIN');
  pin.pattern = '[0-9]{4,6}';
  const reject = el('button', 'reject', 'Reject');
  const approve = el('button', 'approve primary', `Pay ${money(request.amount, request.currency)}`);
  reject.type = approve.type = 'button';
  reject.addEventListener('click', () => decide(request.id, 'reject'));
  approve.addEventListener('click', () => decide(request.id, 'approve'));
  actions.append(pin, reject, approve);
  li.append(head, amount, description, timer, error, actions);
  return li;
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
    timer.textContent = request.transactionId ? `Transaction ${request.transactionId.slice(0, 8)}…` : '';
    timer.classList.remove('soon');
    for (const button of element.querySelectorAll('button')) button.disabled = true;
    element.querySelector('.pin').hidden = true;
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
  const created = { request: { ...request }, element: card(request), decided: false };
  state.requests.set(request.id, created);
  if (request.status === 'PENDING') $('pending').append(created.element);
  render(created);
}

async function decide(id, action) {
  const entry = state.requests.get(id);
  if (!entry) return;
  const error = entry.element.querySelector('.error');
  const buttons = entry.element.querySelectorAll('button');
  error.hidden = true;
  for (const button of buttons) button.disabled = true;
  try {
    const data =
      action === 'approve'
        ? await graphql(
            'mutation($id: ID!, $v: ApprovalVerificationInput!) { approvePaymentRequest(id: $id, verification: $v) { id status transactionId } }',
            { id, v: { pin: entry.element.querySelector('.pin').value } },
          )
        : await graphql('mutation($id: ID!) { rejectPaymentRequest(id: $id) { id status } }', { id });
    upsert(action === 'approve' ? data.approvePaymentRequest : data.rejectPaymentRequest);
    if (action === 'approve') await refreshWallet();
  } catch (err) {
    error.textContent = err.message;
    error.hidden = false;
    if (err.code === 'INSUFFICIENT_FUNDS' && state.wallet) {
      error.textContent = `${err.message} Your balance is ${money(state.wallet.balance, state.wallet.currency)}.`;
    }
    if (err.code === 'PAYMENT_REQUEST_EXPIRED') upsert({ id, status: 'EXPIRED' });
    if (err.code === 'VERIFICATION_FAILED' || err.code === 'VERIFICATION_LOCKED') entry.element.querySelector('.pin').value = '';
    if (entry.request.status === 'PENDING') for (const button of buttons) button.disabled = false;
  }
}

/** Catch-up: the wallet and everything still pending (at start and after every reconnect). */
async function load() {
  const data = await graphql(`{ myWallet { walletId username status balance availableBalance currency } myPendingPaymentRequests { ${REQUEST_FIELDS} } }`);
  showWallet(data.myWallet);
  for (const request of data.myPendingPaymentRequests) upsert(request);
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
      if (field === 'paymentRequested') upsert(request);
      else if (state.requests.has(request.id)) {
        upsert(request);
        if (request.status === 'APPROVED') refreshWallet().catch(() => undefined);
      }
    },
    error: () => setLive(false),
    complete: () => undefined,
  });
  client.subscribe({ query: `subscription { paymentRequested { ${REQUEST_FIELDS} } }` }, sink('paymentRequested'));
  client.subscribe({ query: 'subscription { paymentRequestUpdated { id status updatedAt transactionId } }' }, sink('paymentRequestUpdated'));
}

async function start() {
  $('signin').hidden = true;
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
  $('link-form').addEventListener('submit', (event) => {
    event.preventDefault();
    $('link-error').hidden = true;
    const code = codeOfLink($('link-input').value);
    if (!code) return showLinkError({ message: 'That is not a payment link.' });
    openByCode(code).then(() => ($('link-input').value = ''), showLinkError);
  });
  window.addEventListener('hashchange', () => state.wallet && openLinkFromHash());
  if (state.token) start();
});
