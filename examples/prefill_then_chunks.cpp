// A Llama-3-8B-like layer (32 query heads, 8 KV heads, D=128): prefill of a 1024-token prompt
// over a contiguous KV cache, then chunked prefill of 64-token chunks of two requests over a
// paged cache (pages of 64 tokens). Inputs are random; the program reports what ran.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>

#include <fmha/fmha.h>

namespace {

bool check(cudaError_t e, char const* what) {
    if (e == cudaSuccess) return true;
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    return false;
}

// n FP16 values uniform in [-1, 1] on the device.
void* randomHalf(size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> uni(-1.0F, 1.0F);
    std::vector<uint16_t> host(n);
    for (auto& h : host) {  // float -> IEEE half, round to nearest (values of [-1, 1])
        float const f = uni(rng);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        uint32_t const sign = (bits >> 16) & 0x8000U, exp = (bits >> 23) & 0xFFU, man = bits & 0x7FFFFFU;
        h = static_cast<uint16_t>(exp < 103 ? sign : sign | ((exp - 112) << 10 | man >> 13));
    }
    void* d = nullptr;
    if (!check(cudaMalloc(&d, n * 2), "cudaMalloc") || !check(cudaMemcpy(d, host.data(), n * 2, cudaMemcpyHostToDevice), "copy"))
        std::exit(1);
    return d;
}

int32_t* deviceInts(std::vector<int32_t> const& v) {
    void* d = nullptr;
    if (!check(cudaMalloc(&d, v.size() * 4), "cudaMalloc") ||
        !check(cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice), "copy"))
        std::exit(1);
    return static_cast<int32_t*>(d);
}

}  // namespace

int main() {
    constexpr int32_t kHq = 32, kHkv = 8, kD = 128, kPrompt = 1024, kCap = 4096;
    float const scale = 0.08838835F;  // 1 / sqrt(128)
    std::mt19937 rng(1);
    cudaStream_t stream;
    if (!check(cudaStreamCreate(&stream), "stream")) return 1;

    // 1. Prefill: one sequence, 1024 new tokens onto an empty cache (keys = the prompt itself).
    fmha::FmhaRunner prefill(kHq, kHkv, kD, /*batchSize=*/1, /*seqLenQ=*/kPrompt, /*kvCacheCapacity=*/kCap);
    void* q = randomHalf(size_t{kPrompt} * kHq * kD, rng);
    void* kv = randomHalf(size_t{2} * kHkv * kCap * kD, rng);  // [B=1, 2, Hkv, Cap, D]
    void* o = nullptr;
    check(cudaMalloc(&o, size_t{kPrompt} * kHq * kD * 2), "cudaMalloc");
    int32_t* cuKV = deviceInts({0, kPrompt});
    if (!prefill.preflightLlm(stream) || !prefill.run(q, kv, o, cuKV, stream, scale)) {
        std::fprintf(stderr, "prefill: %s\n", fmha::lastError());
        return 1;
    }
    std::printf("prefill: 1 x %d tokens ran on the %s kernel family\n", kPrompt, fmha::lastKernelFamily());

    // 2. Chunked prefill: two requests with 3000 and 1500 tokens of history each take a 64-token
    // chunk; their keys live in a shared pool of 64-token pages, in any order.
    constexpr int32_t kChunk = 64, kPage = 64, kMaxPages = kCap / kPage, kPool = 2 * 2 * kMaxPages;
    fmha::FmhaRunner chunks(kHq, kHkv, kD, /*batchSize=*/2, /*seqLenQ=*/kChunk, kCap);
    void* pool = randomHalf(size_t{kPool} * kPage * kHkv * kD, rng);
    std::vector<int32_t> table(2 * 2 * kMaxPages);  // [B, 2 (K, V), maxPagesPerSeq]
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>((i * 37) % kPool);
    int32_t* pages = deviceInts(table);
    int32_t* cuHist = deviceInts({0, 3000 + kChunk, 3000 + kChunk + 1500 + kChunk});  // history + chunk
    void* qc = randomHalf(size_t{2} * kChunk * kHq * kD, rng);
    void* oc = nullptr;
    check(cudaMalloc(&oc, size_t{2} * kChunk * kHq * kD * 2), "cudaMalloc");
    fmha::PagedArgs a;
    a.q = qc;
    a.pool = pool;
    a.pageList = pages;
    a.o = oc;
    a.cuKVSeqLens = cuHist;
    a.numPages = kPool;
    a.maxPagesPerSeq = kMaxPages;
    a.tokensPerPage = kPage;
    a.stream = stream;
    a.attentionScale = scale;
    if (!chunks.preflight(a, /*useBidirectional=*/false) || !chunks.runPaged(a)) {
        std::fprintf(stderr, "chunked prefill: %s\n", fmha::lastError());
        return 1;
    }
    if (!check(cudaStreamSynchronize(stream), "synchronize")) return 1;
    std::printf("chunked prefill: 2 x %d tokens over pages of %d ran on the %s kernel family\n", kChunk, kPage,
                fmha::lastKernelFamily());
    for (void* p : {q, kv, o, pool, qc, oc}) cudaFree(p);
    for (int32_t* p : {cuKV, pages, cuHist}) cudaFree(p);
    cudaStreamDestroy(stream);
    return 0;
}
