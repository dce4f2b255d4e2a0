/* What one `cpuid` costs on this CPU. HotSpot 17 on x86 executes it in
 * OrderAccess::cross_modify_fence() whenever a thread leaves the safepoint-poll slow path
 * (after a safepoint or a handshake, SafepointMechanism::process), unless the CPU has the
 * `serialize` instruction. On bare metal it takes ~100 ns; under a hypervisor it always traps
 * (a VM exit), so every sampled thread pays it once per sample (sampler=sps) and every Java
 * thread once per global safepoint (sampler=jvmti). docs/benchmarks.md, "Partial safepoints".
 *
 *   cc -O2 -o target/cpuid_cost bench/native/cpuid_cost.c && target/cpuid_cost
 */
#include <stdio.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void) {
  const int n = 200000;
  double best = 1e30;
  for (int round = 0; round < 5; round++) {
    double start = now_ns();
    for (int i = 0; i < n; i++) {
      int leaf = 0;
      __asm__ volatile("cpuid" : "+a"(leaf) : : "ebx", "ecx", "edx", "memory");
    }
    double each = (now_ns() - start) / n;
    if (each < best) best = each;
  }
  printf("cpuid: %.0f ns each (best of 5 rounds of %d)\n", best, n);
  return 0;
}
