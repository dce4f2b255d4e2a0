/*
 * A JNI library of the tests' own: JniChain.nA enters a three-level native chain
 * Java_JniChain_nA -> nB -> nC, and nC calls back the static Java method JniChain.callback.
 * Built by the tests with `cc -O2 -fomit-frame-pointer -shared -fPIC` (tests/src/lib.rs,
 * native_lib): without frame pointers only DWARF CFI (.eh_frame) finds each level's caller.
 * Each level does its own work before calling down, so samples land in each; no level is
 * inlined or tail-called (noinline, and each uses its callee's result).
 */
#include <jni.h>

/* Spins `n` rounds of a multiply-add the compiler cannot drop (the value passes through an
 * empty asm each round). Inlined into each level, so its samples are that level's own. */
static inline __attribute__((always_inline)) unsigned long spin(unsigned long x, int n) {
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

__attribute__((noinline)) unsigned long nC(JNIEnv *env, jclass cls, jmethodID callback, int n) {
    unsigned long x = spin((unsigned long)n, n);
    x ^= (unsigned long)(*env)->CallStaticLongMethod(env, cls, callback, (jlong)x);
    return x + 1;
}

__attribute__((noinline)) unsigned long nB(JNIEnv *env, jclass cls, jmethodID callback, int n) {
    unsigned long x = spin((unsigned long)n + 1, n);
    x ^= nC(env, cls, callback, n);
    return x + 1;
}

JNIEXPORT jlong JNICALL Java_JniChain_nA(JNIEnv *env, jclass cls, jint n) {
    jmethodID callback = (*env)->GetStaticMethodID(env, cls, "callback", "(J)J");
    if (callback == NULL) {
        return 0; /* NoSuchMethodError pending */
    }
    unsigned long x = spin((unsigned long)n + 2, n);
    x ^= nB(env, cls, callback, n);
    return (jlong)(x + 1);
}
