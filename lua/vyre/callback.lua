-- vyre.callback (internal) — calling user functions from inside vyre (e-graph rule guards,
-- schedulers and cost functions, vyre.policy.megakernel) so that what goes wrong in them
-- reaches the user as one clear error: which callback, what it raised, and a Fix.
--
-- Each call runs in a fresh coroutine. A callback is called from deep inside eg:run or
-- from C (be:megakernel), which cannot be suspended, so a yield would otherwise surface
-- as "attempt to yield from outside a coroutine" (or across a C-call boundary), or, when
-- the caller itself runs in a coroutine, silently suspend vyre half-way. In its own
-- coroutine a yield simply returns control here, where it is refused.
local M = {}

--- Text of an error value, never raising (a __tostring that raises is described).
local function text_of(e)
  if type(e) == "string" then return e end
  local ok, t = pcall(tostring, e)
  if ok and type(t) == "string" then return t end
  return ("(a %s error value whose __tostring raised)"):format(type(e))
end

--- call(what, fn, ...) runs fn(...) and never raises. On success: true, fn's results.
--- Else: false, message, kind, err — message reads "<what> raised: <its error>" (kind
--- "raised", err the original error value) or "<what> yielded; ..." (kind "yielded").
--- `what` names the callback ("the guard of rule 'comm'", "the scheduler", ...).
function M.call(what, fn, ...)
  local co = coroutine.create(fn)
  local r = table.pack(coroutine.resume(co, ...))
  if not r[1] then
    return false, ("%s raised: %s"):format(what, text_of(r[2])), "raised", r[2]
  end
  if coroutine.status(co) ~= "dead" then
    coroutine.close(co) -- runs its pending to-be-closed variables
    return false, ("%s yielded; callbacks must return without yielding (vyre calls them "
      .. "from code that cannot be suspended)"):format(what), "yielded"
  end
  return true, table.unpack(r, 2, r.n)
end

return M
