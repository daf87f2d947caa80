-- 75: vyre.backends(), the backend registry of libvyre (include/vyre_backend.h,
-- src/core/backend_registry.c): every registered backend with its priority, whether it
-- can be opened here and, when not, why. #fakecuda: with the fake driver CUDA is listed
-- as available (scripts/test.sh's fake pass runs that part).
local vyre = require("vyre")

local function by_name(list)
  local t = {}
  for _, e in ipairs(list) do t[e.name] = e end
  return t
end

describe("vyre.backends", function()
  it("lists the reference and CUDA backends with their priorities", function()
    local list = vyre.backends()
    assert.is_true(#list >= 2)
    local t = by_name(list)
    assert.are.same({ name = "reference", priority = 0, available = true }, t.reference)
    assert.are.equal("cuda", t.cuda.name)
    assert.is_true(t.cuda.priority > t.reference.priority)
  end)

  it("gives a reason with a Fix exactly when a backend is not available", function()
    for _, e in ipairs(vyre.backends()) do
      assert.are.equal("boolean", type(e.available))
      if e.available then
        assert.is_nil(e.reason)
      else
        assert.are.equal("string", type(e.reason))
        assert.matches("Fix:", e.reason, 1, true)
      end
    end
  end)

  it("agrees with vyre.cuda.available()", function()
    local ok = vyre.cuda.available()
    assert.are.equal(ok, by_name(vyre.backends()).cuda.available)
  end)

  it("returns a new list each call (callers may change it)", function()
    local a = vyre.backends()
    a[1].name = "changed"
    assert.are_not.equal("changed", vyre.backends()[1].name)
  end)
end)

describe("vyre.backends on the fake CUDA driver #fakecuda", function()
  it("lists CUDA as available, with no reason", function()
    local cuda = by_name(vyre.backends()).cuda
    assert.is_true(cuda.available, cuda.reason)
    assert.is_nil(cuda.reason)
  end)
end)
