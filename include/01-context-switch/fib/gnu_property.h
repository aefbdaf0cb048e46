// gnu_property.h — lesson 1: the ELF note that says which CET features this assembly supports.
//
// Included by every .S file, after its code. With Intel CET, the linker marks a
// binary IBT (indirect-branch tracking) or SHSTK (shadow stack) only if every
// object in it says so in a .note.gnu.property section; a .S file without one
// silently turns both off for the whole program, even one built with
// -fcf-protection. Our routines support IBT: every target of an indirect jump
// starts with endbr64. They do not support shadow stacks: a context resumes
// with a `ret` to an address its own call pushed on *its* stack, which the
// shadow stack of the context that called switch_context does not hold, so
// the CPU would fault. So the note claims IBT only, and a -fcf-protection
// build keeps IBT and drops SHSTK (scripts/check-asm.py checks both).
//
// AArch64 has the same note with its own two features, BTI (branch target
// identification: every target of an indirect branch starts with `bti c`,
// the counterpart of endbr64) and PAC (pointer authentication of return
// addresses). The aarch64/ routines claim BTI only. They do not sign lr
// (paciasp, autiasp): switch_context returns through the lr of the context it
// loads, and a fresh context's first one is the address prepare_context, C++
// code, stored in its Context unsigned, which autiasp would reject. Callers
// built with -mbranch-protection=pac-ret lose nothing: each signs and checks
// its own return address in its own frame, which a switch leaves alone.
#ifndef FIB_GNU_PROPERTY_H
#define FIB_GNU_PROPERTY_H
#ifdef __ASSEMBLER__

#define NT_GNU_PROPERTY_TYPE_0 5

#if defined(__x86_64__)
#define GNU_PROPERTY_X86_FEATURE_1_AND 0xc0000002
#define GNU_PROPERTY_X86_FEATURE_1_IBT 0x1
#define FIB_PROPERTY_TYPE GNU_PROPERTY_X86_FEATURE_1_AND
#define FIB_PROPERTY_FEATURES GNU_PROPERTY_X86_FEATURE_1_IBT
#elif defined(__aarch64__)
#define GNU_PROPERTY_AARCH64_FEATURE_1_AND 0xc0000000
#define GNU_PROPERTY_AARCH64_FEATURE_1_BTI 0x1
#define FIB_PROPERTY_TYPE GNU_PROPERTY_AARCH64_FEATURE_1_AND
#define FIB_PROPERTY_FEATURES GNU_PROPERTY_AARCH64_FEATURE_1_BTI
#endif

    .pushsection .note.gnu.property, "a"
    .p2align 3
    .long   4                                   // name size: "GNU\0"
    .long   16                                  // descriptor size: one property, padded
    .long   NT_GNU_PROPERTY_TYPE_0
    .asciz  "GNU"
    .long   FIB_PROPERTY_TYPE                   // what every object must have
    .long   4                                   // its data size
    .long   FIB_PROPERTY_FEATURES               // IBT, not SHSTK (BTI, not PAC)
    .p2align 3
    .popsection

#endif
#endif
