-- wrk script: POST a small non-streaming OpenAI chat completion (max_tokens 16).
-- Environment: BENCH_MODEL (default bench-model), BENCH_KEY (optional bearer token),
-- BENCH_STREAM=1 for a streaming request (stream:true); BENCH_HEADERS: extra request headers,
-- "Name: value" pairs separated by "|" (a peer gateway's routing headers).
local model = os.getenv("BENCH_MODEL") or "bench-model"
local key = os.getenv("BENCH_KEY")
local stream = os.getenv("BENCH_STREAM") == "1"

wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
if key and key ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. key
end
for pair in string.gmatch(os.getenv("BENCH_HEADERS") or "", "[^|]+") do
  local name, value = string.match(pair, "^%s*([^:]+):%s*(.-)%s*$")
  if name then wrk.headers[name] = value end
end
wrk.body = '{"model":"' .. model .. '","messages":[{"role":"system","content":"You are a terse assistant."},'
  .. '{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":16'
  .. (stream and ',"stream":true' or '') .. '}'
