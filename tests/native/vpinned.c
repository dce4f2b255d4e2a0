/*
 * A JNI library of the tests' own for pinned virtual threads: VPinned.nPark calls back the
 * static Java method VPinned.pinnedPark, so a virtual thread that calls it has a native frame
 * on its stack while it parks there, and cannot unmount (JDK 24+ pin on native frames only).
 */
#include <jni.h>

JNIEXPORT void JNICALL Java_VPinned_nPark(JNIEnv *env, jclass cls, jlong nanos) {
    jmethodID park = (*env)->GetStaticMethodID(env, cls, "pinnedPark", "(J)V");
    if (park == NULL) {
        return; /* NoSuchMethodError pending */
    }
    (*env)->CallStaticVoidMethod(env, cls, park, nanos);
}
