/* sticky.c — probe: can a process recover from a sticky fault by resetting the
 * primary context? Prints each step's CUresult. Not part of the build. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

#define P(fn) static __typeof__(&fn) p_##fn
P(cuInit); P(cuDeviceGet); P(cuDevicePrimaryCtxRetain); P(cuDevicePrimaryCtxRelease); P(cuDevicePrimaryCtxReset);
P(cuCtxSetCurrent); P(cuModuleLoadData); P(cuModuleGetFunction); P(cuLaunchKernel); P(cuCtxSynchronize); P(cuMemAlloc);
static const char *bad =
  ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry bad(){\n .reg .b64 %rd<2>; .reg .b32 %r<2>;\n"
  " mov.u64 %rd1, 0x10; mov.u32 %r1, 7; st.global.u32 [%rd1], %r1; ret; }\n";
int main(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) = (void *)dlsym(h, "cuGetProcAddress_v2");
#define G(fn, v) gpa(#fn, (void **)&p_##fn, v, 0, NULL)
  G(cuInit, 2000); G(cuDeviceGet, 2000); G(cuDevicePrimaryCtxRetain, 7000); G(cuDevicePrimaryCtxRelease, 11000);
  G(cuDevicePrimaryCtxReset, 11000); G(cuCtxSetCurrent, 4000); G(cuModuleLoadData, 2000); G(cuModuleGetFunction, 2000);
  G(cuLaunchKernel, 4000); G(cuCtxSynchronize, 2000); G(cuMemAlloc, 3020);
  CUdevice d; CUcontext c; CUmodule m; CUfunction f; CUdeviceptr ptr;
  printf("init %d\n", p_cuInit(0)); p_cuDeviceGet(&d, 0);
  printf("retain %d\n", p_cuDevicePrimaryCtxRetain(&c, d)); p_cuCtxSetCurrent(c);
  printf("load %d\n", p_cuModuleLoadData(&m, bad)); p_cuModuleGetFunction(&f, m, "bad");
  printf("launch %d\n", p_cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
  printf("sync %d\n", p_cuCtxSynchronize());
  printf("alloc-after %d\n", p_cuMemAlloc(&ptr, 64));
  printf("A: reset while retained %d\n", p_cuDevicePrimaryCtxReset(d));
  printf("A: retain %d\n", p_cuDevicePrimaryCtxRetain(&c, d));
  printf("A: setcurrent %d\n", p_cuCtxSetCurrent(c));
  printf("A: alloc %d\n", p_cuMemAlloc(&ptr, 64));
  printf("B: release %d %d\n", p_cuDevicePrimaryCtxRelease(d), p_cuDevicePrimaryCtxRelease(d));
  printf("B: setcurrent NULL %d\n", p_cuCtxSetCurrent(NULL));
  printf("B: reset %d\n", p_cuDevicePrimaryCtxReset(d));
  printf("B: retain %d\n", p_cuDevicePrimaryCtxRetain(&c, d));
  printf("B: setcurrent %d\n", p_cuCtxSetCurrent(c));
  printf("B: alloc %d\n", p_cuMemAlloc(&ptr, 64));
  return 0;
}
