// CUDA-graph kernels under the code that built them: a graph captured from a stream in
// capture_graph, a second graph built node by node in add_nodes (an explicit kernel node plus
// the captured graph as a child graph), the second one instantiated twice and the first one on
// its own, and all three executable graphs replayed from replay. Every replayed kernel must sit
// under replay (the graph launch) and, below it, under the function that built its node:
// cap_k1/cap_k2 under capture_graph (also when they run inside the child graph), add_k under
// add_nodes.
#include "common.h"

__global__ void cap_k1(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
__global__ void cap_k2(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void add_k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] -= 3.0f; }

NOINLINE cudaGraph_t capture_graph(float* d, int n, cudaStream_t s) {
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  cap_k1<<<(n + 255) / 256, 256, 0, s>>>(d, n);
  cap_k2<<<(n + 255) / 256, 256, 0, s>>>(d, n);
  CHECK(cudaStreamEndCapture(s, &g));
  return g;
}

NOINLINE cudaGraph_t add_nodes(float* d, int n, cudaGraph_t child) {
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  void* args[] = {&d, &n};
  cudaKernelNodeParams p = {};
  p.func = (void*)add_k;
  p.gridDim = dim3((n + 255) / 256);
  p.blockDim = dim3(256);
  p.kernelParams = args;
  cudaGraphNode_t k, c;
  CHECK(cudaGraphAddKernelNode(&k, g, nullptr, 0, &p));
  CHECK(cudaGraphAddChildGraphNode(&c, g, &k, 1, child));
  return g;
}

NOINLINE void replay(cudaGraphExec_t exec, cudaStream_t s) {
  CHECK(cudaGraphLaunch(exec, s));
}

int main(int argc, char** argv) {
  int iters = arg_int(argc, argv, 1, 4);
  const int n = 1 << 16;
  float* d;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t captured = capture_graph(d, n, s);
  cudaGraph_t built = add_nodes(d, n, captured);
  // Three executable graphs: the built one instantiated twice (re-instantiation), the captured
  // one on its own (a second graph).
  cudaGraphExec_t execs[3];
  CHECK(cudaGraphInstantiate(&execs[0], built, 0));
  CHECK(cudaGraphInstantiate(&execs[1], built, 0));
  CHECK(cudaGraphInstantiate(&execs[2], captured, 0));
  for (int i = 0; i < iters; i++)
    for (cudaGraphExec_t e : execs) replay(e, s);
  CHECK(cudaStreamSynchronize(s));
  for (cudaGraphExec_t e : execs) CHECK(cudaGraphExecDestroy(e));
  CHECK(cudaGraphDestroy(built));
  CHECK(cudaGraphDestroy(captured));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d));
  std::printf("EXPECT kernels=%d launchers=replay graph_nodes=3 capture_launchers=capture_graph,add_nodes "
              "recorded=cap_k1:capture_graph,cap_k2:capture_graph,add_k:add_nodes\n", 8 * iters);
  return 0;
}
