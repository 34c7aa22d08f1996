-- The client address as a Lua handler reads it (client_address_test.sh):
-- req.client, nil when unknown.
return function(req)
  return 200, "client=" .. tostring(req.client) .. "\n"
end
