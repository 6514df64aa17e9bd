// Host-side conversions between float and the 16-bit / 8-bit storage formats
// (IEEE half, bfloat16, FP8 E4M3), written from the format definitions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace fmha::num {

inline uint32_t floatBits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float bitsFloat(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline float halfToFloat(uint16_t h) {
    uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    float mag;
    if (exp == 0) {
        mag = std::ldexp(static_cast<float>(man), -24);
    } else if (exp == 31) {
        mag = man ? NAN : INFINITY;
    } else {
        mag = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
    }
    return sign ? -mag : mag;
}

// Round to nearest even, overflow to infinity.
inline uint16_t floatToHalf(float f) {
    uint32_t sign = (floatBits(f) >> 16) & 0x8000u;
    float a = std::fabs(f);
    if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7E00u);
    if (a >= 65520.0F) return static_cast<uint16_t>(sign | 0x7C00u);
    if (a < std::ldexp(1.0F, -14)) {  // subnormal: multiples of 2^-24
        float q = std::nearbyint(std::ldexp(a, 24));
        return static_cast<uint16_t>(sign | static_cast<uint32_t>(q));
    }
    int e;
    float m = std::frexp(a, &e);                       // a = m * 2^e, m in [0.5, 1)
    float q = std::nearbyint(std::ldexp(m, 11));       // 11 significant bits
    if (q >= 2048.0F) { q /= 2; e += 1; }
    uint32_t exp = static_cast<uint32_t>(e - 1 + 15);
    if (exp >= 31) return static_cast<uint16_t>(sign | 0x7C00u);
    return static_cast<uint16_t>(sign | (exp << 10) | (static_cast<uint32_t>(q) & 0x3FFu));
}

inline float bf16ToFloat(uint16_t b) { return bitsFloat(static_cast<uint32_t>(b) << 16); }

inline uint16_t floatToBf16(float f) {
    uint32_t u = floatBits(f);
    if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40u);
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7FFFu + lsb;
    return static_cast<uint16_t>(u >> 16);
}

// E4M3 (OCP FP8): 1 sign, 4 exponent (bias 7), 3 mantissa bits; S.1111.111 is NaN; no infinities.
inline float e4m3ToFloat(uint8_t v) {
    uint32_t sign = v >> 7, exp = (v >> 3) & 0xFu, man = v & 0x7u;
    if (exp == 15 && man == 7) return NAN;
    float mag = exp == 0 ? std::ldexp(static_cast<float>(man), -9)
                         : std::ldexp(static_cast<float>(man | 8u), static_cast<int>(exp) - 10);
    return sign ? -mag : mag;
}

// Round to nearest even, saturating to +-448.
inline uint8_t floatToE4m3(float f) {
    if (std::isnan(f)) return 0x7F;
    uint8_t sign = std::signbit(f) ? 0x80 : 0;
    float a = std::fabs(f);
    if (a >= 448.0F) return static_cast<uint8_t>(sign | 0x7E);
    if (a < std::ldexp(1.0F, -6)) {  // subnormal: multiples of 2^-9
        float q = std::nearbyint(std::ldexp(a, 9));
        return static_cast<uint8_t>(sign | static_cast<uint8_t>(q));  // q == 8 is the smallest normal
    }
    int e;
    float m = std::frexp(a, &e);
    float q = std::nearbyint(std::ldexp(m, 4));  // 4 significant bits
    if (q >= 16.0F) { q /= 2; e += 1; }
    uint32_t exp = static_cast<uint32_t>(e - 1 + 7);
    uint32_t bits = (exp << 3) | (static_cast<uint32_t>(q) & 0x7u);
    if (bits > 0x7E) bits = 0x7E;
    return static_cast<uint8_t>(sign | bits);
}

inline float roundToHalf(float f) { return halfToFloat(floatToHalf(f)); }
inline float roundToBf16(float f) { return bf16ToFloat(floatToBf16(f)); }

}  // namespace fmha::num
