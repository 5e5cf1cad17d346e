/* CPUID with features hidden: CPU_SPREAD_MASK=avx512 hides AVX-512 VNNI, =avx2 every AVX-512
   and VNNI bit (leaf 7). CPUID faulting traps each CPUID; the handler runs the real one and
   edits its answer. Built and preloaded by bench/cpu_spread.py. */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static int avx2_only;

static void real_cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0);
}

static void on_segv(int sig, siginfo_t *info, void *context) {
    (void)info;
    ucontext_t *uc = context;
    greg_t *g = uc->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)g[REG_RIP];
    if (ip[0] != 0x0f || ip[1] != 0xa2) { /* not CPUID: a real fault */
        signal(sig, SIG_DFL);
        return;
    }
    unsigned leaf = (unsigned)g[REG_RAX], sub = (unsigned)g[REG_RCX], r[4];
    real_cpuid(leaf, sub, r);
    if (leaf == 7 && sub == 0) {
        r[2] &= ~(1u << 11);                                    /* avx512_vnni */
        if (avx2_only) {
            r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) |
                      (1u << 28) | (1u << 30) | (1u << 31));    /* f dq ifma pf er cd bw vl */
            r[2] &= ~((1u << 1) | (1u << 6) | (1u << 12) | (1u << 14)); /* vbmi vbmi2 bitalg
                                                                           vpopcntdq */
            r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 23)); /* 4vnniw 4fmaps
                                                                          vp2intersect fp16 */
        }
    } else if (leaf == 7 && sub == 1) {
        r[0] &= ~((1u << 4) | (1u << 5));                       /* avx_vnni, avx512_bf16 */
    }
    g[REG_RAX] = r[0];
    g[REG_RBX] = r[1];
    g[REG_RCX] = r[2];
    g[REG_RDX] = r[3];
    g[REG_RIP] += 2;
}

__attribute__((constructor)) static void start(void) {
    const char *mode = getenv("CPU_SPREAD_MASK");
    if (mode == NULL || *mode == '\0') return;
    avx2_only = strcmp(mode, "avx2") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) abort();
}
