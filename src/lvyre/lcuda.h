/* lcuda.h — private pieces shared by the CUDA binding files (lcuda.c: module
 * functions and vyre.cuda.Device; lcuda_buffer.c: vyre.cuda.Buffer; lcuda_kernel.c:
 * vyre.cuda.Kernel, sequences and vyre.cuda.Graph). Each userdata keeps its parent
 * alive through user value 1 (buffer/kernel/graph -> device). */
#ifndef VYRE_LCUDA_H
#define VYRE_LCUDA_H

#include "lvyre.h"
#include "vyre_cuda.h"

#define VYRE_LUA_CUDA_DEVICE "vyre.cuda.Device"
#define VYRE_LUA_CUDA_BUFFER "vyre.cuda.Buffer"
#define VYRE_LUA_CUDA_KERNEL "vyre.cuda.Kernel"
#define VYRE_LUA_CUDA_GRAPH "vyre.cuda.Graph"
#define VYRE_LUA_CUDA_LAUNCH "vyre.cuda.Launch"
#define VYRE_CU_MAX_ARGS_LUA 64 /* raw PTX launch arguments */

struct lcuda_device { vyre_cuda_device *d; };
struct lcuda_buffer { vyre_cuda_buffer *b; };
struct lcuda_kernel {
    vyre_cuda_kernel *k;
    struct vyre_lua_program *prog; /* NULL for raw PTX kernels; kept alive by user value 2 */
};

/* Checkers: raise "bad argument" for a wrong type and a Fix for a released object. */
vyre_cuda_device *vyre_lcuda_checkdevice(lua_State *L, int idx, const char *fname);
vyre_cuda_buffer *vyre_lcuda_checkbuffer(lua_State *L, int idx, const char *fname);
struct lcuda_kernel *vyre_lcuda_checkkernel(lua_State *L, int idx, const char *fname);
/* Points the device's out-of-memory handler at a full GC of this Lua state. */
void vyre_lcuda_arm_oom(lua_State *L, vyre_cuda_device *d);
/* Pushes a Buffer userdata owning b, parented to the device userdata at dev_idx. */
void vyre_lcuda_pushbuffer(lua_State *L, vyre_cuda_buffer *b, int dev_idx);
/* Converts a vyre.Array or Lua table at idx into an Array of type t pushed on the
 * stack (a table is converted element by element; an array is used as is). */
struct vyre_lua_array *vyre_lcuda_toarray(lua_State *L, int idx, enum vyre_type t,
                                          const char *fname);
/* Timing table {wall_ns, device_ns, enqueue_ns, wait_ns}. */
void vyre_lcuda_pushtiming(lua_State *L, const struct vyre_cuda_timing *t);

/* Shared by k:launch, sequences and bound launches (lcuda_kernel.c). */
vyre_program *vyre_lcuda_kernel_program(lua_State *L, struct lcuda_kernel *u, const char *fname);
vyre_cuda_device *vyre_lcuda_kernel_device(lua_State *L, int idx);
void vyre_lcuda_read_args(lua_State *L, int args, const vyre_program *p, vyre_cuda_device *dev,
                          vyre_cuda_buffer **bufs, vyre_bits *params, const char *fname);
void vyre_lcuda_read_opts(lua_State *L, int idx, struct vyre_cuda_args *a, uint32_t grid[3],
                          const char *fname);
/* k:bind(args, opts) -> vyre.cuda.Launch (lcuda_launch.c). */
int vyre_lcuda_kernel_bind(lua_State *L);
void vyre_lcuda_open_launch(lua_State *L);

void vyre_lcuda_open_buffer(lua_State *L);
void vyre_lcuda_open_kernel(lua_State *L);

#endif
