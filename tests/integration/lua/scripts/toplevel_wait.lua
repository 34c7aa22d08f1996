gearbox.sleep(0.1)
return function() return 200, "never\n" end
