-- wrk -s mixed.lua: the "mixed" workload of the advisor check (bench_advisor.py).
-- Requests alternate between a CPU-heavy route and a waiting one, so one daemon
-- serves two routes whose best models disagree.
local n = 0
request = function()
  n = n + 1
  if n % 2 == 0 then
    return wrk.format("GET", "/burn?us=200")
  end
  return wrk.format("GET", "/sleep?ms=20")
end
