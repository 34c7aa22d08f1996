-- The Lua suite's application: one branch per behaviour under test, chosen
-- by ?do=. Top-level code only defines things.
local json = gearbox.json
local warmed = "no"
local served = 0

local function sleep(req)
  gearbox.sleep(tonumber(req.query.s))
  return 200, "slept " .. req.query.s .. "\n"
end

local function hot_loop()
  local s = 0
  for i = 1, 3e6 do s = s + i % 7 end
  return 200, "sum=" .. s .. " jit=" .. tostring(require("jit").status()) .. "\n"
end

local function tcp(req)
  local sock = gearbox.tcp()
  sock:settimeout(tonumber(req.query.timeout or 2000))
  local ok, err = sock:connect("127.0.0.1", tonumber(req.query.port))
  if not ok then return 200, "connect_err=" .. err .. "\n" end
  local _, err = sock:send((req.query.line or "ping") .. "\n")
  if err then return 200, "send_err=" .. err .. "\n" end
  local line, err, partial = sock:receive(req.query.pattern or "*l")
  if not line then
    return 200, "receive_err=" .. err .. " partial=" .. tostring(partial) .. "\n"
  end
  local reused = sock:getreusedtimes()
  if req.query.keep then
    sock:setkeepalive(60000, tonumber(req.query.keep))
  else
    sock:close()
  end
  return 200, "line=" .. line .. " reused=" .. reused .. "\n"
end

local function memory()
  local t = {}
  for i = 1, 1e8 do t[i] = string.rep("x", 64) .. i end
  return 200, "unreachable\n"
end

local function info(req)
  served = served + 1
  local tags = req.query.tag
  if type(tags) == "table" then tags = table.concat(tags, ",") end
  return 200, json.encode({
    method = req.method, path = req.path, name = req.query.name,
    tags = tags, flag = req.query.flag,
    agent = req.headers["X-Agent"], agent_lower = req.headers["x-agent"],
    warmed = warmed, worker = gearbox.worker.index,
  }) .. "\n", { ["Content-Type"] = "application/json", ["X-Served"] = served }
end

-- req's fields are built on first read: these read them only after a wait,
-- when the request's own buffer has been reused.
local function late(req)
  gearbox.sleep(0)
  return 200, json.encode({
    method = req.method, path = req.path, name = req.query.name,
    agent = req.headers["X-Agent"], client = req.client, body = req.body,
  }) .. "\n"
end

-- A req kept past its request: reading a field not built during it fails
-- with a clear error instead of reading another request's data.
local kept
local function keep(req) kept = req; return 200, "kept\n" end
local function stale()
  if not kept then return 200, "none\n" end
  local ok, err = pcall(function() return kept.headers end)
  return 200, tostring(ok) .. " " .. tostring(err) .. "\n"
end

-- gearbox.json.decode: nesting, and containers past the sizes a decoded
-- table starts with.
local function decode()
  local v = json.decode('{"a":[1,2,3,4,5,6],"b":{"c":null,"d":true,"e":"x",' ..
                        '"f":1.5,"g":2,"h":[]}}')
  local b = v.b
  return 200, table.concat({ #v.a, v.a[6], tostring(b.c == gearbox.null),
                             tostring(b.d), b.e, b.f, b.g, #b.h }, " ") .. "\n"
end

local routes = {
  sleep = sleep, hot = hot_loop, tcp = tcp, memory = memory,
  late = late, keep = keep, stale = stale, decode = decode,
  error = function() local t = nil; return 200, t.field end,
  badstatus = function() return "teapot" end,
}

return {
  init = function(worker)
    gearbox.sleep(0.001)  -- every wait works in init
    warmed = "worker " .. worker.index
  end,
  GET = function(req)
    local branch = routes[req.query["do"] or ""]
    if branch then return branch(req) end
    return info(req)
  end,
  POST = function(req)
    if req.query["do"] == "late" then return late(req) end
    return 201, "got " .. #req.body .. " bytes: " .. req.body .. "\n"
  end,
}
