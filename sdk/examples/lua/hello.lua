-- hello.lua: the smallest Lua handler. Top-level code runs once per worker,
-- when the worker starts; the returned function runs once per request.
--
--   [[route]]
--   path = "/hello"
--   handler = "lua"
--   script = "/usr/share/gearbox/examples/lua/hello.lua"
return function(req)
  return 200, "hello " .. (req.query.name or "world") .. "\n",
         { ["Content-Type"] = "text/plain" }
end
