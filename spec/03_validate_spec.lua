-- 03: vyre.validate — true, or false + every problem as {code, path, message, fix}.
local vyre = require("vyre")
local H = require("spec.helpers")

local function problems(text)
  local p = H.parse(text)
  local ok, probs, msg = vyre.validate(p)
  assert.is_false(ok)
  return probs, msg
end

local function codes(probs)
  local out = {}
  for i, pr in ipairs(probs) do out[i] = pr.code end
  return out
end

describe("vyre.validate", function()
  it("returns exactly true for a valid program", function()
    local ok, probs = vyre.validate(H.saxpy())
    assert.are.equal(true, ok)
    assert.is_nil(probs)
  end)

  it("reports every problem at once with code, path, message and fix", function()
    local probs, msg = problems([[
(program b (workgroup 64)
  (buffer o f32 write)
  (store o 0u32 (rem 1.0f32 2.0f32))
  (let x (add 1u32 1i32))
  (break)
  (store o 0u32 y))
]])
    assert.are.same({ "rem-float", "type-mismatch", "break-outside-loop", "undeclared-name" },
      codes(probs))
    assert.are.same({
      code = "type-mismatch", path = "body[1].value",
      message = "add needs two operands of the same type, got u32 and i32 in (add 1u32 1i32)",
      fix = "wrap the i32 operand in (cast u32 ...)", cast = "u32",
    }, probs[2])
    assert.are.equal("body[0].value", probs[1].path)
    assert.are.equal("body[2]", probs[3].path)
    assert.matches("^invalid program 'b': 4 problems:", msg)
    assert.matches("body[3].value: 'y' is not declared before this use. Fix: ", msg, 1, true)
  end)

  it("rejects a barrier under `if gid < 3`", function()
    local probs = problems([[
(program b (workgroup 64)
  (shared s u32 64)
  (if (lt (gid x) 3u32)
    (then (barrier))))
]])
    assert.are.same({ "barrier-divergent" }, codes(probs))
    assert.are.equal("body[0].then[0]", probs[1].path)
  end)

  it("rejects a barrier whose condition depends on gid through a variable", function()
    local probs = problems([[
(program b (workgroup 64)
  (let i (gid x))
  (let c (lt i 3u32))
  (if c
    (then (barrier))))
]])
    assert.are.same({ "barrier-divergent" }, codes(probs))
  end)

  it("accepts a barrier under uniform control flow (wgid, params)", function()
    local p = H.parse([[
(program ub (workgroup 64)
  (param n u32)
  (if (lt (wgid x) n)
    (then (barrier))))
]])
    assert.is_true(vyre.validate(p))
  end)

  it("rejects stores to read buffers, reused names and writes to loop variables", function()
    local probs = problems([[
(program b (workgroup 64)
  (buffer o u32 read)
  (store o 0u32 1u32)
  (let o 1u32)
  (for j 0u32 4u32 1u32
    (set j 1u32)))
]])
    assert.are.equal("store-read-only", probs[1].code)
    assert.are.equal("set-loop-variable", probs[3].code)
    assert.are.equal("body[2].body[0]", probs[3].path)
    assert.are.equal(3, #probs)
  end)

  it("names the type a cast fixes a problem with as data (cast), and only then", function()
    local probs = problems([[
(program c (workgroup 64)
  (buffer o u32 read_write)
  (store o 1.0f32 1u32)
  (let x (add 1u32 1i32))
  (store o 0u32 (rem 1.0f32 2.0f32)))
]])
    assert.are.same({ "index-type", "type-mismatch", "rem-float" }, codes(probs))
    assert.are.equal("u32", probs[1].cast)
    assert.are.equal("u32", probs[2].cast)
    assert.is_nil(probs[3].cast) -- rem on floats: no cast makes it right
  end)

  it("rejects non-bool conditions and mismatched store values", function()
    local probs = problems([[
(program b (workgroup 1)
  (buffer o u32 write)
  (if 1u32
    (then (store o 0u32 1.5f32))))
]])
    assert.are.equal(2, #probs)
    for _, pr in ipairs(probs) do
      assert.is_string(pr.message)
      assert.is_true(#pr.fix > 0)
    end
  end)

  it("checks workgroup limits", function()
    local probs = problems("(program w (workgroup 2048))")
    assert.are.same({ "workgroup-size" }, codes(probs))
  end)
end)
