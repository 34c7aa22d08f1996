-- proxy.lua: forwards ?q= as one line to a line-protocol TCP backend (a
-- cosocket) and answers its one-line reply. The connection goes back to the
-- worker's keep-alive pool after each request.
--
--   [[route]]
--   path = "/proxy"
--   handler = "lua"
--   script = "/usr/share/gearbox/examples/lua/proxy.lua"
--   timeout = "2s"
--
-- The backend's address: a numeric address and port (a host name would
-- block the worker on DNS), or unix:/path. Read once, when the script loads.
local backend = os.getenv("GEARBOX_PROXY_BACKEND") or "127.0.0.1:7000"
local host, port = backend:match("^(.*):(%d+)$")
if backend:sub(1, 5) == "unix:" then host, port = backend, nil end

return {
  GET = function(req)
    local q = req.query.q
    if type(q) ~= "string" or q:find("[\r\n]") then
      return 400, "give one line as ?q=\n"
    end
    local sock = gearbox.tcp()
    sock:settimeout(1000)
    local ok, err = sock:connect(host, tonumber(port))
    if not ok then
      gearbox.log("warn", "proxy_connect_failed", { backend = backend, err = err })
      return 502, "backend: " .. err .. "\n"
    end
    local sent, err = sock:send(q .. "\n")
    if not sent then return 502, "backend: " .. err .. "\n" end
    local line, err = sock:receive("*l")
    if not line then
      return err == "timeout" and 504 or 502, "backend: " .. err .. "\n"
    end
    sock:setkeepalive()
    return 200, line .. "\n", { ["Content-Type"] = "text/plain" }
  end,
}
