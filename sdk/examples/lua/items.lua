-- items.lua: a PostgreSQL point lookup answered as JSON. The pool is made
-- at the top level (nothing connects then: connections open with the first
-- query, one pool per worker); each query is prepared once per connection.
--
--   [[route]]
--   path = "/items"
--   handler = "lua"
--   script = "/usr/share/gearbox/examples/lua/items.lua"
--
-- The database: a libpq conninfo from GEARBOX_ITEMS_DSN, read once when the
-- script loads (keep a password in a passfile, not here).
local json = gearbox.json
local db = gearbox.postgres{
  dsn = os.getenv("GEARBOX_ITEMS_DSN") or "host=/run/postgresql dbname=app",
  pool = 4,
}

return {
  GET = function(req)
    local id = tonumber(req.query.id)
    if not id then return 400, "give ?id=N\n" end
    local rows, err, sqlstate = db:query(
      "SELECT id, name, price, note FROM items WHERE id = $1", id)
    if not rows then
      gearbox.log("warn", "items_query_failed",
                  { err = err, sqlstate = sqlstate })
      return 502, json.encode({ error = err, sqlstate = sqlstate }) .. "\n",
             { ["Content-Type"] = "application/json" }
    end
    if #rows == 0 then return 404, "no item " .. id .. "\n" end
    return 200, json.encode(rows[1]) .. "\n",
           { ["Content-Type"] = "application/json" }
  end,
}
