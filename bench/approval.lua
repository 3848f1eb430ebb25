-- wrk script of bench/approval.mjs: each request approves the next PENDING payment request of the
-- list in WRK_APPROVALS (a file of "userToken<TAB>paymentRequestId" lines) over GraphQL, with the
-- wallet's PIN (WRK_PIN). A response is good when it is 200 and carries no GraphQL error.
-- Prints one line: WRK {json}.
local list = {}
local pin = os.getenv("WRK_PIN") or "135790"
local next_index = 0
local bad = 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  for line in io.lines(os.getenv("WRK_APPROVALS")) do
    local token, id = line:match("^(%S+)\t(%S+)$")
    if token then table.insert(list, { token, id }) end
  end
end

function request()
  next_index = next_index + 1
  local item = list[((next_index - 1) % #list) + 1]
  local body = '{"query":"mutation($id: ID!, $pin: String!) { approvePaymentRequest(id: $id, verification: { pin: $pin }) { id status } }","variables":{"id":"'
    .. item[2] .. '","pin":"' .. pin .. '"}}'
  return wrk.format("POST", "/graphql", { ["Authorization"] = "Bearer " .. item[1], ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  if status ~= 200 or string.find(body, '"errors"', 1, true) then bad = bad + 1 end
end

function done(summary, latency, requests)
  local b = 0
  for _, t in ipairs(threads) do b = b + (t:get("bad") or 0) end
  local e = summary.errors
  io.write(string.format('WRK {"requests":%d,"duration_us":%d,"bad":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, b, e.connect + e.read + e.write + e.timeout + e.status,
    latency:percentile(50), latency:percentile(99)))
end
