-- lua_postgres_test.sh's script: pool:query on the shared postgres code.
local db = gearbox.postgres{ dsn = os.getenv("GEARBOX_TEST_DSN"), pool = 1 }

local branches = {
  add = function(q)  -- a bound parameter
    local rows, err = db:query("SELECT $1::int + 1 AS n, NULL::text AS nothing", q.n)
    if not rows then return 502, err .. "\n" end
    local r = rows[1]
    return 200, "n=" .. r.n .. " type=" .. type(r.n) ..
                " null=" .. tostring(r.nothing == gearbox.null) .. "\n"
  end,
  bad = function()
    local rows, err, sqlstate = db:query("SELECT * FROM no_such_table")
    return 200, "rows=" .. tostring(rows) .. " err=" .. tostring(err) ..
                " sqlstate=" .. tostring(sqlstate) .. "\n"
  end,
  many = function()  -- more distinct statements than a connection keeps
    for i = 1, 70 do
      local rows, err = db:query("SELECT " .. i .. " AS n")
      if not rows or rows[1].n ~= i then return 502, tostring(err) .. "\n" end
    end
    local rows = db:query("SELECT count(*) AS n FROM pg_prepared_statements")
    return 200, "prepared=" .. rows[1].n .. "\n"
  end,
  sleep = function(q)
    db:query("SELECT pg_sleep($1)", q.s)
    return 200, "slept\n"
  end,
}

return function(req)
  local branch = branches[req.query["do"] or ""]
  if not branch then return 404, "no such branch\n" end
  return branch(req.query)
end
