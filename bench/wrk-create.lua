-- wrk script of bench/scale-out.mjs and bench/fanout.mjs: POST /api/v1/wallet/request-payment, walletId round-robin over
-- WRK_WALLETS (comma-separated), a unique Idempotency-Key per request, Authorization WRK_AUTH.
-- Prints one line: WRK {json} (requests, duration, errors, latency percentiles in microseconds).
local auth = os.getenv("WRK_AUTH") or ""
local run = os.getenv("WRK_RUN") or tostring(os.time())
local wallets = {}
for w in string.gmatch(os.getenv("WRK_WALLETS") or "", "[^,]+") do wallets[#wallets + 1] = w end
local n = 0
-- WRK_DELAY_MS: each connection waits this long before each request (a steady rate: connections x 1000 / delay per second).
local pause = tonumber(os.getenv("WRK_DELAY_MS") or "0")
if pause > 0 then
  function delay() return pause end
end
function request()
  n = n + 1
  local body = '{"walletId":"' .. wallets[(n % #wallets) + 1] .. '","amount":1.5,"description":"scale order","merchantName":"Scale Shop"}'
  return wrk.format("POST", nil, { ["Authorization"] = auth, ["Content-Type"] = "application/json", ["Idempotency-Key"] = run .. "-" .. n }, body)
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK {"requests":%d,"duration_us":%d,"non2xx":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
end
