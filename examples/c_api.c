/* The C API: a ViT-style packed varlen call (two images of 256 and 100 tokens, 16 heads,
 * D=80), with the library's version and error reporting. Inputs are zero-filled for brevity. */
#include <stdio.h>

#include <cuda_runtime_api.h>

#include <fmha/fmha_c.h>

int main(void) {
    const int32_t heads = 16, dim = 80, total = 356;
    const int32_t cu[3] = {0, 256, 356};
    void *q = NULL, *k = NULL, *v = NULL, *o = NULL, *cu_dev = NULL;
    size_t const bytes = (size_t)total * heads * dim * 2;
    printf("fmha %d (headers %d)\n", fmha_version(), FMHA_VERSION_NUMBER);
    if (cudaMalloc(&q, bytes) != cudaSuccess || cudaMalloc(&k, bytes) != cudaSuccess ||
        cudaMalloc(&v, bytes) != cudaSuccess || cudaMalloc(&o, bytes) != cudaSuccess ||
        cudaMalloc(&cu_dev, sizeof cu) != cudaSuccess) {
        fprintf(stderr, "no GPU memory\n");
        return 1;
    }
    cudaMemset(q, 0, bytes);
    cudaMemset(k, 0, bytes);
    cudaMemset(v, 0, bytes);
    cudaMemcpy(cu_dev, cu, sizeof cu, cudaMemcpyHostToDevice);
    fmha_runner* r = fmha_runner_create(heads, heads, dim, 0, 0, 0);
    if (!fmha_preflight_vit(r, NULL) ||
        !fmha_run_vit(r, q, k, v, o, (const int32_t*)cu_dev, total, 256, 2, NULL, 0.1118034f, false, 1.f, 1.f, 1.f)) {
        fprintf(stderr, "%s\n", fmha_last_error());
        fmha_runner_destroy(r);
        return 1;
    }
    printf("vit: %s\n", cudaDeviceSynchronize() == cudaSuccess ? "ok" : "failed");
    fmha_runner_destroy(r);
    cudaFree(q);
    cudaFree(k);
    cudaFree(v);
    cudaFree(o);
    cudaFree(cu_dev);
    return 0;
}
