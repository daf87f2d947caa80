-- 76: errors inside user callbacks (issue 26). An e-graph rule guard, a scheduler, a cost
-- function and a user vyre.policy.megakernel that raise are reported as that callback's
-- error: its name (the rule's name, "scheduler", "cost function", "policy.megakernel"),
-- the original message and a Fix. One that yields is refused with a clear error instead
-- of "attempt to yield from outside a coroutine" — also when the caller runs inside a
-- coroutine, where a yield would otherwise suspend vyre half-way. Reference backend.
local vyre = require("vyre")
local H = require("spec.helpers")
local callback = require("vyre.callback")

-- An e-graph with x + 0 and one rule; opts go to eg:rule.
local function graph(opts)
  local eg = vyre.egraph(vyre.backend("reference"))
  eg:op("Add", 2)
  eg:op("Num", 0)
  eg:add("Add", eg:leaf("Num", 1), eg:leaf("Num", 0))
  eg:rule("zero_right", "(Add ?a (Num 0))", "?a", opts)
  return eg
end

local RUN = { iterations = 2, scheduler = vyre.egraph.simple() }

-- The message of fn(...), checked for the parts every callback error has.
local function wrapped(fn, ...)
  local msg = H.error_of(fn, ...)
  assert.matches("Fix: ", msg, 1, true)
  assert.is_nil(msg:find("outside a coroutine", 1, true), msg)
  assert.is_nil(msg:find("C%-call boundary"), msg)
  return msg
end

-- Runs fn(...) inside a coroutine (as a user's scheduler loop would): its error message.
local function in_coroutine(fn, ...)
  local co = coroutine.create(fn)
  local ok, err = coroutine.resume(co, ...)
  assert.is_false(ok, "expected an error, the call returned or yielded")
  assert.are.equal("dead", coroutine.status(co))
  return tostring(err)
end

describe("user callbacks", function()
  it("vyre.callback.call returns results, or names the callback that raised or yielded", function()
    assert.are.same({ true, 1, 2 }, { callback.call("f", function(a) return a, 2 end, 1) })
    local ok, msg = callback.call("the thing", function() error("oops", 0) end)
    assert.is_false(ok)
    assert.are.equal("the thing raised: oops", msg)
    ok, msg = callback.call("the thing", function() coroutine.yield(1) end)
    assert.is_false(ok)
    assert.matches("^the thing yielded; callbacks must return without yielding", msg)
    ok, msg = callback.call("t", function()
      error(setmetatable({}, { __tostring = function() error("x") end }))
    end)
    assert.is_false(ok)
    assert.matches("t raised: %(a table error value whose __tostring raised%)", msg)
  end)

  it("a rule guard that raises names the rule, keeps the message and gives a Fix", function()
    local eg = graph({ guard = function() error("guard exploded", 0) end })
    local msg = wrapped(eg.run, eg, RUN)
    assert.matches("vyre.EGraph:run: the guard of rule 'zero_right' raised: guard exploded. "
      .. "Fix: make the guard of rule 'zero_right' return a boolean", msg, 1, true)
  end)

  it("a rule guard that yields is refused, in and outside a coroutine", function()
    local eg = graph({ guard = function() coroutine.yield() return true end })
    local msg = wrapped(eg.run, eg, RUN)
    assert.matches("the guard of rule 'zero_right' yielded; callbacks must return without "
      .. "yielding", msg, 1, true)
    assert.matches("the guard of rule 'zero_right' yielded", in_coroutine(eg.run, eg, RUN), 1,
      true)
  end)

  it("a guard that works still filters matches", function()
    local eg = graph({ guard = function() return false end })
    local rep = eg:run(RUN)
    assert.are.equal("saturated", rep.stop)
    assert.are.same({ 3, 3 }, { eg:size() }) -- nothing merged: 3 e-nodes, 3 e-classes
    eg = graph({ guard = function(s) return s.a >= 0 end })
    eg:run(RUN)
    assert.are.same({ 3, 2 }, { eg:size() }) -- 1 + 0 merged with 1
  end)

  it("a scheduler that raises or yields is named with the iteration and rule", function()
    local eg = graph()
    local msg = wrapped(eg.run, eg, { scheduler = function() error("sched broke", 0) end })
    assert.matches("vyre.EGraph:run: the scheduler (iteration 1, rule 'zero_right') raised: "
      .. "sched broke. Fix: make the scheduler function(iteration, rule_name, matches) return "
      .. "a boolean", msg, 1, true)
    -- the e-graph keeps counting iterations across eg:run calls (issue 25 §3): the first
    -- run's iteration 1 was stopped by the raise, so this run is at iteration 2
    msg = wrapped(eg.run, eg, { scheduler = function() return coroutine.yield() end })
    assert.matches("the scheduler (iteration 2, rule 'zero_right') yielded", msg, 1, true)
  end)

  it("a cost function that raises or yields names the op", function()
    local eg = graph()
    local root = eg:add("Add", eg:leaf("Num", 2), eg:leaf("Num", 3))
    local msg = wrapped(eg.extract, eg, root, function(name)
      if name == "Num" then error("no cost for " .. name, 0) end
      return 1
    end)
    assert.matches("vyre.EGraph:extract: the cost function (for op 'Num') raised: no cost for "
      .. "Num. Fix: make the cost function(name, arity) return a positive integer", msg, 1, true)
    msg = wrapped(eg.extract, eg, root, function() coroutine.yield() end)
    assert.matches("the cost function (for op 'Add') yielded", msg, 1, true)
    local _, text = eg:extract(root, function() return 1 end)
    assert.are.equal("(Add (Num 2) (Num 3))", text)
  end)

  it("a compact predicate function that yields is refused; its errors keep their words", function()
    local lib = require("vyre.lib")
    local be = vyre.backend("reference")
    local src, dst = be:buffer("i32", { 1, -2, 3 }), be:buffer("i32", 3)
    local msg = wrapped(lib.compact, be, src, function(x) coroutine.yield() return x:gt(0) end,
      dst)
    assert.matches("vyre.lib.compact: the predicate function yielded; callbacks must return "
      .. "without yielding", msg, 1, true)
    assert.matches("the predicate function yielded", in_coroutine(lib.compact, be, src,
      function(x) coroutine.yield() return x:gt(0) end, dst), 1, true)
    msg = H.error_of(lib.compact, be, src, function() error("pred broke", 0) end, dst)
    assert.matches("vyre.lib.compact: the predicate function failed: pred broke", msg, 1, true)
    assert.are.equal(2, lib.compact(be, src, function(x) return x:gt(0) end, dst))
  end)

  describe("a user vyre.policy.megakernel", function()
    local policy = require("vyre.policy")
    local saved, be, k, a
    before_each(function()
      saved = policy.megakernel
      be = vyre.backend("reference")
      k = be:compile(vyre.parse(H.INC))
      a = be:buffer("u32", 64)
    end)
    after_each(function() policy.megakernel = saved end)

    it("that raises is named as the policy, with its message and a Fix", function()
      policy.megakernel = function() error("policy broke", 0) end
      local msg = wrapped(be.plan, be, { { k, { v = a } } })
      assert.matches("vyre.policy.megakernel (a user policy) raised: policy broke. Fix: make "
        .. "the policy return {mode =", msg, 1, true)
      assert.matches("vyre.policy.default_megakernel", msg, 1, true)
      msg = wrapped(be.megakernel, be, { { k, { v = a } } })
      assert.matches("policy broke", msg, 1, true)
    end)

    it("that yields is refused (be:plan is C and cannot yield)", function()
      policy.megakernel = function() coroutine.yield() end
      local msg = wrapped(be.plan, be, { { k, { v = a } } })
      assert.matches("vyre.policy.megakernel (a user policy) yielded", msg, 1, true)
      assert.matches("vyre.policy.megakernel (a user policy) yielded",
        in_coroutine(be.plan, be, { { k, { v = a } } }), 1, true)
    end)

    it("that works is used, and the default's own errors are not re-wrapped", function()
      policy.megakernel = function() return { mode = "split", reason = "mine" } end
      assert.are.equal("vyre.policy: mine", be:plan({ { k, { v = a } } }).reason)
      policy.megakernel = saved
      local msg = H.error_of(policy.decide, { steps = 1, force = "cooperative",
        cooperative = false })
      assert.is_nil(msg:find("(a user policy)", 1, true))
    end)
  end)
end)
