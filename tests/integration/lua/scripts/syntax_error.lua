return function(req)
  return 200, "ok"
end end
