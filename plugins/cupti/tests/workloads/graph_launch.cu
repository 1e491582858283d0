// A CUDA graph of three kernels captured from a stream and launched repeatedly: every node
// must be attributed to the cudaGraphLaunch call site in launch_graph.
#include "common.h"

__global__ void graph_k1(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
__global__ void graph_k2(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void graph_k3(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] -= 3.0f; }

NOINLINE void build_graph(float* d, int n, cudaStream_t s, cudaGraphExec_t* exec) {
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  graph_k1<<<(n + 255) / 256, 256, 0, s>>>(d, n);
  graph_k2<<<(n + 255) / 256, 256, 0, s>>>(d, n);
  graph_k3<<<(n + 255) / 256, 256, 0, s>>>(d, n);
  CHECK(cudaStreamEndCapture(s, &g));
  CHECK(cudaGraphInstantiate(exec, g, 0));
  CHECK(cudaGraphDestroy(g));
}

NOINLINE void launch_graph(cudaGraphExec_t exec, cudaStream_t s) {
  CHECK(cudaGraphLaunch(exec, s));
}

int main(int argc, char** argv) {
  int iters = arg_int(argc, argv, 1, 4);
  const int n = 1 << 16;
  float* d;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraphExec_t exec;
  build_graph(d, n, s, &exec);
  for (int i = 0; i < iters; i++) launch_graph(exec, s);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d));
  std::printf("EXPECT kernels=%d launchers=launch_graph graph_nodes=3\n", 3 * iters);
  return 0;
}
