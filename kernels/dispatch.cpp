#include <cstdlib>
#include <mutex>
#include <string>

#include <xsimd/xsimd.hpp>

#if defined(QINFER_HAVE_X86)
#include <cpuid.h>
#endif

#include "kernels/kernels.hpp"
#include "qinfer/error.hpp"

#if defined(QINFER_HAVE_X86)
#include "kernels/x86/x86_fill.hpp"
#endif

namespace qinfer::kernels {

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kNeon:
      return "neon";
    case Isa::kAvx512NoVbmi:
      return "avx512-novbmi";
    case Isa::kNeonPlain:
      return "neon-plain";
    case Isa::kAvx2Vnni:
      return "avx2-vnni";
  }
  return "unknown";
}

namespace {

#if defined(QINFER_HAVE_X86)
// xsimd 8 detects the base architectures (and is used for NEON) but not VL/VNNI/F16C, so the
// x86 checks read CPUID and XCR0 (the OS must save the AVX / AVX-512 register state).
struct X86Features {
  bool avx2 = false, avx_vnni = false, avx512 = false, avx512_vbmi = false, avx512_bf16 = false;
  bool intel = false;
  X86Features() {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    intel = b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;  // "GenuineIntel"
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28),
               f16c = c & (1u << 29);
    if (!osxsave || !avx) return;
    unsigned xcr0_lo, xcr0_hi;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    const bool os_avx = (xcr0_lo & 0x6u) == 0x6u, os_avx512 = (xcr0_lo & 0xe6u) == 0xe6u;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    avx2 = os_avx && fma && f16c && (b & (1u << 5));
    const bool f = b & (1u << 16), bw = b & (1u << 30), vl = b & (1u << 31), vnni = c & (1u << 11);
    const bool bmi2 = b & (1u << 8);  // every AVX-512 CPU has it; the AVX-512 files use pext
    avx512 = avx2 && os_avx512 && f && bw && vl && vnni && bmi2;
    // VBMI, GFNI and BITALG (Ice Lake, Zen 4 on)
    avx512_vbmi = avx512 && (c & (1u << 1)) && (c & (1u << 8)) && (c & (1u << 12));
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
      avx_vnni = avx2 && (a & (1u << 4));       // Alder Lake, Sapphire Rapids, Zen 5 on
      avx512_bf16 = avx512 && (a & (1u << 5));  // Cooper Lake, Sapphire Rapids, Zen 4 on
    }
  }
};

const X86Features& x86_features() {
  static const X86Features f;
  return f;
}
#endif

bool cpu_has(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return true;
#if defined(QINFER_HAVE_X86)
    case Isa::kAvx2:
      return x86_features().avx2;
    case Isa::kAvx2Vnni:
      return x86_features().avx_vnni;
    case Isa::kAvx512:
    case Isa::kAvx512NoVbmi:
      return x86_features().avx512;
#endif
#if defined(QINFER_HAVE_NEON)
    case Isa::kNeon:
    case Isa::kNeonPlain:
      return xsimd::available_architectures().neon64;
#endif
    default:
      return false;
  }
}

struct Tables {
  KernelTable scalar, avx2, avx2_vnni, avx512, avx512_novbmi, neon, neon_plain;
  Tables() {
    fill_scalar_table(scalar);
#if defined(QINFER_HAVE_X86)
    // A table is filled only when the CPU runs its ISA: the fill functions are compiled with
    // that ISA's flags and may use its instructions (an AVX2-only CPU faults in the AVX-512 one).
    if (cpu_has(Isa::kAvx2)) {
      avx2 = scalar;
      fill_avx2_table(avx2, false);
    }
    if (cpu_has(Isa::kAvx2Vnni)) {
      avx2_vnni = scalar;
      fill_avx2_table(avx2_vnni, true);
    }
    if (cpu_has(Isa::kAvx512)) {  // each sets its own interleaved gemvs (or none) for every type
      avx512 = avx2;
      fill_avx512_table(avx512, true);
      avx512_novbmi = avx2;
      fill_avx512_table(avx512_novbmi, false);
    }
#endif
#if defined(QINFER_HAVE_NEON)
    if (cpu_has(Isa::kNeon)) {
      neon = scalar;
      fill_neon_table(neon, neon_has_dotprod());
      neon_plain = scalar;
      fill_neon_table(neon_plain, false);
    }
#endif
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

#if defined(QINFER_HAVE_X86)
void fill_avx2_table(KernelTable& t, bool vnni) {
  if (vnni) {
    fill_avx2_isa<Isa::kAvx2Vnni>(t);
  } else {
    fill_avx2_isa<Isa::kAvx2>(t);
  }
}

bool cpu_has_avx512_vbmi() { return x86_features().avx512_vbmi; }
bool cpu_has_avx512_bf16() { return x86_features().avx512_bf16; }
bool cpu_is_intel() { return x86_features().intel; }
#endif

namespace {
// Every ISA and variant, worst first.
constexpr Isa kAllIsas[] = {Isa::kScalar,   Isa::kNeonPlain,    Isa::kNeon,  Isa::kAvx2,
                            Isa::kAvx2Vnni, Isa::kAvx512NoVbmi, Isa::kAvx512};
}  // namespace

std::vector<Isa> available_isas() {
  std::vector<Isa> out;
  for (Isa isa : kAllIsas) {
    if (cpu_has(isa)) out.push_back(isa);
  }
  return out;
}

const KernelTable& table(Isa isa) {
  if (!cpu_has(isa)) {
    throw Error(ErrorCode::kUnsupported, "ISA '" + std::string(isa_name(isa)) +
                                             "' is not available on this CPU or in this build");
  }
  const Tables& t = tables();
  switch (isa) {
    case Isa::kAvx2:
      return t.avx2;
    case Isa::kAvx2Vnni:
      return t.avx2_vnni;
    case Isa::kAvx512:
      return t.avx512;
    case Isa::kAvx512NoVbmi:
      return t.avx512_novbmi;
    case Isa::kNeon:
      return t.neon;
    case Isa::kNeonPlain:
      return t.neon_plain;
    default:
      return t.scalar;
  }
}

const KernelTable& active() {
  static const KernelTable* chosen = [] {
    const char* env = std::getenv("QINFER_ISA");
    if (env != nullptr && *env != '\0') {
      const std::string want(env);
      for (Isa isa : kAllIsas) {
        if (want == isa_name(isa)) return &table(isa);
      }
      std::string names;
      for (Isa isa : kAllIsas) names += (names.empty() ? "" : ", ") + std::string(isa_name(isa));
      throw Error(ErrorCode::kInvalidArgument, "QINFER_ISA='" + want + "' is not one of " + names);
    }
    return &table(available_isas().back());
  }();
  return *chosen;
}

void dequantize_row(const KernelTable& k, TensorType type, const void* src, float* dst, int64_t n) {
  const auto f = k.types[static_cast<uint32_t>(type)].dequantize_row;
  if (f == nullptr) {
    throw Error(ErrorCode::kUnsupported, "no dequantizer for " + std::string(type_name(type)));
  }
  f(src, dst, n);
}

float vec_dot(const KernelTable& k, TensorType type, int64_t n, const void* w, const void* act) {
  const TypeKernels& tk = k.types[static_cast<uint32_t>(type)];
  if (tk.vec_dot == nullptr) {
    throw Error(ErrorCode::kUnsupported, "no dot product for " + std::string(type_name(type)));
  }
  std::vector<uint8_t> copy;  // the ISA's layout, where it has one
  if (tk.prepare_act != nullptr) {
    const auto* a = static_cast<const uint8_t*>(act);
    copy.assign(a, a + row_size_bytes(type_traits(type).vec_dot_type, n));
    tk.prepare_act(copy.data(), n);
    act = copy.data();
  }
  float out = 0.0f;
  tk.vec_dot(n, w, act, 0, 1, &out);
  return out;
}

void prepare_activation(const KernelTable& k, TensorType weight_type, void* act, int64_t n) {
  const auto f = k.types[static_cast<uint32_t>(weight_type)].prepare_act;
  if (f != nullptr) f(act, n);
}

void quantize_activation(const KernelTable& k, TensorType act_type, const float* src, void* dst,
                         int64_t n) {
  const auto f = k.quantize_act[static_cast<uint32_t>(act_type)];
  if (f == nullptr) {
    throw Error(ErrorCode::kUnsupported,
                "no activation quantizer for " + std::string(type_name(act_type)));
  }
  f(src, dst, n);
}

}  // namespace qinfer::kernels
