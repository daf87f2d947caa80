-- spec/88_errors_spec.lua — errors are vyre.Error objects (docs/API.md "Errors"): a stable
-- code, the message and the fix as fields, and tostring giving the whole text
-- "vyre.fn: what. Fix: how"; buffers name their backend (buf.backend). The CUDA cases run
-- on the fake driver (tag fakecuda) and on a GPU (tag gpu).
local vyre = require("vyre")
local E = require("vyre.errors")
local H = require("spec.helpers")

local function caught(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return err
end

-- One error of a representative call: its code, and that message and fix make its text.
local function check(err, code, text_pattern)
  assert.is_true(E.is(err), "not a vyre.Error: " .. tostring(err))
  assert.are.equal(code, err.code)
  assert.is_string(err.message)
  assert.is_string(err.fix)
  assert.are.equal(err.where .. err.message .. " Fix: " .. err.fix, tostring(err))
  assert.matches(text_pattern, tostring(err))
end

local function common_cases(open)
  local be
  setup(function() be = open() end)
  it("a freed buffer is code 'freed'", function()
    local b = be:buffer("f32", 4)
    b:free()
    check(caught(b.download, b), "freed", "^vyre%.Buffer:download: the buffer was freed%.")
  end)

  it("a method called with a dot is code 'self'", function()
    local k = be:compile(H.saxpy())
    check(caught(k.launch, nil), "self",
      "^vyre%.Kernel:launch: called on a nil, not a vyre%.Kernel%. Fix: call it with a colon")
    check(caught(be.run, k), "self", "^vyre%.Backend:run: called on a vyre%.Kernel, not a")
    local eg = vyre.egraph(be)
    check(caught(function() eg.find(nil, 0) end), "self",
      "vyre%.EGraph:find: called on a nil, not a vyre%.EGraph")
  end)

  it("a bad argument value is code 'arg', a wrong type code 'type'", function()
    check(caught(be.buffer, be, "f32", -1), "arg", "element count %-1 is negative")
    check(caught(be.buffer, be, "f32", "x"), "type", "expected an element count")
  end)

  it("a buffer of another backend object is code 'backend'", function()
    local other = vyre.backend("reference")
    local k = be:compile(H.saxpy())
    local x = other:buffer("f32", 4)
    check(caught(k.launch, k, { x = x, y = be:buffer("f32", 4), a = 1.0 }), "backend",
      "another backend")
  end)

  it("worklists, element ranges, sequence options and renamed methods raise with codes",
    function()
    check(caught(be.worklist, be, "bool", 4), "type", "worklist items cannot be bool")
    check(caught(be.worklist, be, "u32", 0), "arg", "capacity must be an integer from 1")
    local b = be:buffer("u32", 4)
    check(caught(b.download, b, { first = 1, nbytes = 4 }), "arg",
      "either elements .* or bytes")
    check(caught(b.download, b, 4), "type", "no longer a positional byte offset")
    check(caught(b.download, b, { first = 6 }), "arg", "past the end of the 4 elements")
    local k = be:compile(H.saxpy())
    local step = { k, { x = be:buffer("f32", 4), y = be:buffer("f32", 4), a = 1.0 } }
    check(caught(be.sequence, be, { step }, { bogus = 1 }), "arg", "unknown option 'bogus'")
    check(caught(be.sequence, be, { step }, { readback = { { b, 2, 9 } } }), "arg",
      "run past the end")
    check(caught(function() return b:device_ptr() end), "arg", "buf:pointer%(%)")
    check(caught(function() return be:check() end), "arg", "be:synchronize%(%)")
  end)

  it("buf.backend is the backend that made the buffer, views included", function()
    local b = be:buffer("u32", 8)
    assert.are.equal(be, b.backend)
    assert.are.equal(be, b:view(2, 3).backend)
    assert.are.equal(be.name, b.backend.name)
  end)
end

describe("error objects", function()
  it("tostring is today's text and string methods still work on it", function()
    local a = vyre.array("f32", 4)
    local err = caught(function() return a[9] end)
    check(err, "arg", "^vyre%.Array: index 9 is out of range")
    assert.are.equal("arrays are 1-based; use an index between 1 and #a", err.fix)
    assert.truthy(err:find("out of range", 1, true))
    assert.are.equal(#tostring(err), #err)
    assert.are.equal("x" .. tostring(err), "x" .. err)
  end)

  it("a parse error is code 'parse' with line and column as fields", function()
    local err = caught(vyre.parse, "(program")
    check(err, "parse", "^vyre%.parse: line 1, column 9: ")
    assert.are.equal(1, err.line)
    assert.are.equal(9, err.column)
    assert.is_string(err.reason)
  end)

  it("a DSL validation error is code 'validate', at the user's line, with its site", function()
    local err = caught(vyre.program, "bad",
      { workgroup = 1, vyre.buffer("x", "f32", "read_write") },
      function(k) k.x[0] = k.x[0] + vyre.lit("u32", 1) end)
    assert.are.equal("arg", err.code)
    assert.matches("88_errors_spec%.lua:%d+: ", err.where)
    local v = caught(vyre.program, "bad2",
      { workgroup = 1, vyre.buffer("x", "u32", "read_write") },
      function(k) k.x[0] = vyre.lit("f32", 1) end)
    check(v, "validate", "vyre%.program: ")
    assert.matches("88_errors_spec%.lua:%d+$", v.site)
  end)

  it("vyre.lib errors carry codes and point at the caller", function()
    local be = vyre.backend("reference")
    local err = caught(function()
      local r = vyre.lib.reduce(be, "not a buffer") -- not a tail call: this frame stays
      return r
    end)
    check(err, "type", "vyre%.lib%.reduce: ")
    assert.matches("88_errors_spec%.lua:%d+: ", err.where)
  end)

  it("errors.raise positions like error() and errors.code reads only objects", function()
    local err = caught(function() E.raise("limit", "vyre.x: too big. Fix: smaller") end)
    check(err, "limit", "88_errors_spec%.lua:%d+: vyre%.x: too big%. Fix: smaller$")
    assert.is_nil(E.code("a string"))
    assert.are.equal("limit", E.code(err))
    assert.has_error(function() E.new("no-such-code", "x") end)
  end)

  it("buf:random's CUDA kernel is written in C from the host generator's description",
    function()
      -- one description (src/lvyre/lgen.c) for the host loop and the kernel text; that they
      -- give the same elements is checked on the fake driver by spec 71
      for _, t in ipairs(vyre.types) do
        local text = vyre.core.random_kernel_text(t)
        assert.matches("^%(program lib_random_" .. t, text)
        assert.is_true((vyre.validate(vyre.parse(text))))
      end
      check(caught(vyre.core.random_kernel_text, "f16"), "arg", "unknown type")
    end)

  it("every code has a meaning written down", function()
    for code, meaning in pairs(E.CODES) do
      assert.is_string(code)
      assert.is_true(#meaning > 10)
    end
  end)
end)

describe("error objects on the reference backend", function()
  common_cases(function() return vyre.backend("reference") end)
end)

-- (only where the fake driver is loaded: a GPU run sets up no fake describes)
if H.fake_loaded() then
  describe("error objects on the fake CUDA driver #fakecuda", function()
    common_cases(H.fake_backend)
  end)
end

describe("error objects on CUDA #gpu", function()
  common_cases(function() return assert(vyre.backend("cuda")) end)
end)
