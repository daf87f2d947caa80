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

-- The binding is a layer over these backends (issue 21 §2): a vyre.Backend's name,
-- info, counters and buffers are its backend's own.
describe("a vyre.Backend over its registered backend", function()
  it("takes its name from the backend and counts buffers and transfers there", function()
    local be = vyre.reference.new()
    assert.are.equal("reference", be.name)
    assert.are.equal("reference", be:info().backend)
    local b = be:buffer("u32", { 1, 2, 3, 4 }) -- one upload of 16 bytes
    local v = b:view(2, 2)
    assert.are.same({ 2, 3 }, v:download():totable()) -- one download of 8 bytes
    local st = be:stats()
    assert.are.equal(1, st.live_buffers) -- a view owns no memory
    assert.are.equal(16, st.live_buffer_bytes)
    assert.are.same({ 1, 16, 1, 8 }, { st.uploads, st.bytes_up, st.downloads, st.bytes_down })
    b:free()
    assert.are.equal(0, be:stats().live_buffers)
    assert.are.equal(0, be:stats().runs) -- be:run's counter is the binding's, on every backend
  end)

  it("keeps buffers and kernels usable after be:free() until they are freed", function()
    local be = vyre.reference.new()
    local b = be:buffer("u32", { 1, 2, 3 })
    local v = b:view(2)
    local k = be:compile(vyre.parse([[
(program inc (workgroup 64)
  (buffer v u32 read_write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))
]]))
    be:free()
    assert.are.equal("vyre.Backend(reference, freed)", tostring(be))
    k:launch({ v = b })
    assert.are.same({ 2, 3, 4 }, b:download():totable())
    assert.are.same({ 3, 4 }, v:download():totable())
    assert.has_error(function() be:buffer("u32", 1) end)
    b:free()
    assert.is_true(v.freed)
    k:free()
  end)

  it("copies between buffers of one backend and of two", function()
    local a, b = vyre.reference.new(), vyre.reference.new()
    local x = a:buffer("i32", { 5, 6, 7 })
    local y = b:buffer("i32", 4)
    x:copy_to(y)
    assert.are.same({ 5, 6, 7, 0 }, y:download():totable())
    x:view(2):copy_to(x) -- overlapping views of one buffer
    assert.are.same({ 6, 7, 7 }, x:download():totable())
  end)
end)

describe("a buffer copied between the reference and CUDA #fakecuda", function()
  it("is staged through host memory both ways", function()
    local cu = assert(require("vyre.cuda").device(0))
    local ref = vyre.reference.new()
    local x = ref:buffer("f32", { 1.5, 2.5 })
    local d = cu:buffer("f32", 2)
    x:copy_to(d)
    assert.are.same({ 1.5, 2.5 }, d:download():totable())
    local back = ref:buffer("f32", 3)
    d:copy_to(back)
    assert.are.same({ 1.5, 2.5, 0 }, back:download():totable())
    assert.are.equal("cuda", cu.name)
    assert.is_true(cu:info().backend == "cuda" and cu:info().name ~= "cuda")
  end)
end)

-- Issue 21's bar: the binding is one layer over the backend interface, with no test of
-- which backend it is on. What only a device has is reached through its native objects
-- (vyre_backend_native_device and friends), never by naming the backend.
describe("the Lua binding (src/lvyre)", function()
  it("tests no backend kind: no kind enum, no comparison of a backend's name", function()
    local files = {}
    for _, dir in ipairs({ "src/lvyre" }) do
      local p = assert(io.popen("ls " .. dir .. "/*.c " .. dir .. "/*.h 2>/dev/null"))
      for f in p:lines() do files[#files + 1] = f end
      p:close()
    end
    assert.is_true(#files > 20, "run the specs from the repository root")
    local patterns = { "LVYRE_CUDA", "LVYRE_REFERENCE", "enum lvyre_kind", "legacy_kind",
      'strcmp%([^)]*name[^)]*, "cuda"%)', 'strcmp%([^)]*name[^)]*, "reference"%)' }
    local found = {}
    for _, f in ipairs(files) do
      local fh = assert(io.open(f))
      local n = 0
      for line in fh:lines() do
        n = n + 1
        for _, pat in ipairs(patterns) do
          if line:find(pat) then found[#found + 1] = f .. ":" .. n .. ": " .. line end
        end
      end
      fh:close()
    end
    assert.are.same({}, found)
  end)
end)
