local config = nil
local port = config.port
return function() return 200, "never\n" end
