# Per-ISA object libraries (DESIGN §3, STYLE 2). Each tier's kernels live in
# kernels/<arch>/<tier>/ and are compiled only with that tier's flags, and only
# if a probe shows the compiler accepts them. Everything else stays baseline.
include(CheckCSourceCompiles)

set(QK_X86 OFF)
set(QK_ARM OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(QK_X86 ON)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(QK_ARM ON)
endif()

# tier -> arch dir, flags, probe snippet
set(QK_TIERS avx2 avxvnni avx512 avx512vnni neon neondot neoni8mm)
set(qk_arch_avx2 x86)
set(qk_flags_avx2 -mavx2 -mfma -mf16c)
set(qk_probe_avx2 "#include <immintrin.h>
int main(void){__m256 a=_mm256_fmadd_ps(_mm256_set1_ps(1),_mm256_set1_ps(2),_mm256_setzero_ps());
__m128i h=_mm256_cvtps_ph(a,0); __m256i i=_mm256_maddubs_epi16(_mm256_set1_epi8(1),_mm256_set1_epi8(2));
return _mm_cvtsi128_si32(h)+_mm256_extract_epi32(i,0);}")
set(qk_arch_avxvnni x86)
set(qk_flags_avxvnni -mavx2 -mfma -mf16c -mavxvnni)
set(qk_probe_avxvnni "#include <immintrin.h>
int main(void){__m256i a=_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(),_mm256_set1_epi8(1),_mm256_set1_epi8(2));
return _mm256_extract_epi32(a,0);}")
set(qk_arch_avx512 x86)
set(qk_flags_avx512 -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512dq -mavx512vl)
set(qk_probe_avx512 "#include <immintrin.h>
int main(void){__m512i a=_mm512_maddubs_epi16(_mm512_set1_epi8(1),_mm512_set1_epi8(2));
__m512 f=_mm512_cvtepi32_ps(_mm512_madd_epi16(a,a)); return (int)_mm512_reduce_add_ps(f);}")
set(qk_arch_avx512vnni x86)
set(qk_flags_avx512vnni -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni)
set(qk_probe_avx512vnni "#include <immintrin.h>
int main(void){__m512i a=_mm512_dpbusd_epi32(_mm512_setzero_si512(),_mm512_set1_epi8(1),_mm512_set1_epi8(2));
return _mm512_reduce_add_epi32(a);}")
set(qk_arch_neon arm)
set(qk_flags_neon -march=armv8-a)
set(qk_probe_neon "#include <arm_neon.h>
int main(void){float32x4_t a=vfmaq_f32(vdupq_n_f32(1),vdupq_n_f32(2),vdupq_n_f32(3)); return (int)vaddvq_f32(a);}")
set(qk_arch_neondot arm)
set(qk_flags_neondot -march=armv8.2-a+dotprod)
set(qk_probe_neondot "#include <arm_neon.h>
int main(void){int32x4_t a=vdotq_s32(vdupq_n_s32(0),vdupq_n_s8(1),vdupq_n_s8(2)); return vaddvq_s32(a);}")
set(qk_arch_neoni8mm arm)
set(qk_flags_neoni8mm -march=armv8.2-a+dotprod+i8mm)
set(qk_probe_neoni8mm "#include <arm_neon.h>
int main(void){int32x4_t a=vmmlaq_s32(vdupq_n_s32(0),vdupq_n_s8(1),vdupq_n_s8(2)); return vaddvq_s32(a);}")

set(QK_ISA_OBJECTS "")
set(QK_BUILT_TIERS scalar)
foreach(tier IN LISTS QK_TIERS)
  string(TOUPPER ${tier} TIER)
  set(QK_HAVE_${TIER} 0)
  set(arch ${qk_arch_${tier}})
  if((arch STREQUAL "x86" AND QK_X86) OR (arch STREQUAL "arm" AND QK_ARM))
    list(JOIN qk_flags_${tier} " " CMAKE_REQUIRED_FLAGS)
    check_c_source_compiles("${qk_probe_${tier}}" QK_PROBE_${TIER})
    unset(CMAKE_REQUIRED_FLAGS)
    file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/${arch}/${tier}/*.c)
    if(QK_PROBE_${TIER})
      set(QK_HAVE_${TIER} 1)
      list(APPEND QK_BUILT_TIERS ${tier})
      if(srcs)
        add_library(qk_${tier} OBJECT ${srcs})
        target_compile_options(qk_${tier} PRIVATE ${qk_flags_${tier}})
        target_include_directories(qk_${tier} PRIVATE ${PROJECT_SOURCE_DIR}/kernels ${PROJECT_SOURCE_DIR}/kernels/include ${PROJECT_BINARY_DIR}/generated)
        set_target_properties(qk_${tier} PROPERTIES POSITION_INDEPENDENT_CODE ON)
        list(APPEND QK_ISA_OBJECTS $<TARGET_OBJECTS:qk_${tier}>)
      endif()
    else()
      message(STATUS "qkbench: the compiler cannot build tier ${tier}; it is left out")
    endif()
  endif()
endforeach()
message(STATUS "qkbench: tiers compiled: ${QK_BUILT_TIERS}")
