-- vyre/help/multigpu.lua — help texts of several GPUs: NCCL, groups and their
-- collectives, collective steps, peer copies (docs/MULTIGPU.md). First line: the call;
-- then what it does.
return {
  ["vyre.cuda.nccl"] = [=[
cuda.nccl() -> {version =, version_string =, path =} | false, reason
NCCL as loaded at first use: from $VYRE_LIBNCCL, else libnccl.so.2 on the loader's path,
else a Python environment's nvidia/nccl/lib (docs/MULTIGPU.md lists where). No GPU needed.]=],
  ["vyre.cuda.nccl_id"] = [=[
cuda.nccl_id() -> string
A new NCCL unique id (256 hex digits): made by one rank and given to every rank of a
group of processes (vyre.cuda.group({rank =, size =, id =})).]=],
  ["vyre.cuda.group"] = [=[
cuda.group(ordinals | {rank =, size =, id =} [, {timeout =, blocking =, device =}]) -> Group
A list of ordinals: this process drives those GPUs, one rank each. {rank, size, id}: this
process is one rank of a group of processes, on opts.device (default $VYRE_LOCAL_RANK,
else rank modulo the device count). Waits on NCCL give up after opts.timeout seconds
($VYRE_NCCL_TIMEOUT, default 300) and abort the group instead of hanging. opts.blocking
(g.blocking): blocking NCCL communicators enqueue on this thread (default for a list of
ordinals); non-blocking ones (default for one rank per process) cannot hang on a lost
peer but cost ~0.2 ms per collective (docs/MULTIGPU.md).]=],
  ["vyre.cuda.group_from_env"] = [=[
cuda.group_from_env([opts]) -> Group
This process's rank of the group `vyre launch` started (VYRE_RANK, VYRE_SIZE,
VYRE_NCCL_ID, VYRE_LOCAL_RANK). opts as for cuda.group.]=],

  ["Group"] = [=[
vyre.Group — NCCL communicators over CUDA backends (docs/MULTIGPU.md)
Fields: g.size (ranks), g.rank (the first rank driven here), g.backends (the backends
of the devices driven here, in rank order), g.blocking (NCCL mode), g.freed.
Collectives take lists of Buffers, one per entry of g.backends (or one Buffer when
there is one), and run asynchronously
on each device's stream, ordered with its kernels.]=],
  ["Group:all_reduce"] = [=[
g:all_reduce(bufs [, dst] [, op]) -> g
Every rank gets the reduction over all ranks, in place or into the dst list. op: "add"
(default), "prod", "min", "max"; bool buffers take "min" (and) or "max" (or).]=],
  ["Group:broadcast"] = [=[
g:broadcast(bufs [, dst], root) -> g
Every rank gets the root rank's buffer, in place or into the dst list.]=],
  ["Group:reduce"] = [=[
g:reduce(bufs [, dst], root [, op]) -> g
The root rank gets the reduction over all ranks (in place or into dst); the others'
buffers are unchanged.]=],
  ["Group:all_gather"] = [=[
g:all_gather(src, dst) -> g
Every rank's dst gets all ranks' src in rank order (#dst = g.size * #src).]=],
  ["Group:reduce_scatter"] = [=[
g:reduce_scatter(src, dst [, op]) -> g
Rank r's dst gets block r of the reduction of all ranks' src (#src = g.size * #dst).]=],
  ["Group:all_to_all"] = [=[
g:all_to_all(src, dst) -> g
Block j of rank r's src (#src / g.size elements) lands as block r of rank j's dst.]=],
  ["Group:send"] = [=[
g:send(buf, peer) -> g
Sends buf to rank peer (which calls g:recv); groups of one process per GPU only.]=],
  ["Group:recv"] = [=[
g:recv(buf, peer) -> g
Receives rank peer's g:send into buf; groups of one process per GPU only.]=],
  ["Group:synchronize"] = [=[
g:synchronize() -> g
Waits for every device the group drives here, watching NCCL's errors; gives up (and
aborts the group) after the group's timeout.]=],
  ["Group:collective"] = [=[
g:collective(name, <the arguments of g:name>) -> {step for g.backends[1], ...}
The collective as steps: step i ({c}, c a vyre.Collective) goes into the step list of
g.backends[i], next to kernel steps: be:sequence and be:graph (one process per GPU) or
g:sequence (one process, many GPUs) run it in stream order with the kernels.]=],
  ["Group:sequence"] = [=[
g:sequence({steps of g.backends[1], ...} [, {times = n}]) -> g
Runs each device's step list on its device, times times, in lockstep: each device's
kernels up to its next collective step, then those collectives together; then waits.
Every list holds the same collectives in the same order.]=],
  ["Group:free"] = [=[
g:free()
Destroys the group's communicators (also at garbage collection or a <close> scope).]=],

  ["Collective"] = [=[
vyre.Collective — one device's part of a collective, as a step (g:collective)
Put {c} into that device's steps; it keeps its group and buffers alive.]=],
  ["Collective:free"] = [=[
c:free()
Releases the step (a sequence or graph using it must not run afterwards).]=],

  ["Buffer:copy_to"] = [=[
buf:copy_to(dst) -> buf
Copies the whole buffer to the start of dst (same type, at least as many elements) on
any device: the driver's peer path when the devices allow it, else staged through host
memory (be:info().peers says which). Ordered after the work queued on both devices.
Between two backends of different kinds (reference and CUDA) it is staged through host
memory.]=],
}
