/*
 * hpm_sps.h: the interface of the patched JVM's self-sampling in partial safepoints.
 *
 * This header is documentation and the reference the agent mirrors (agent/jvm); the JVM side
 * declares the same types in src/hotspot/share/prims/jvmtiHpmSps.hpp (patches/0002-...).
 * Both functions are JVMTI extension functions: find them with GetExtensionFunctions by id and
 * call them through jvmtiExtensionFunction, i.e. jvmtiError (JNICALL *)(jvmtiEnv*, ...),
 * passing exactly the parameters listed below (a jboolean travels as an int through "...").
 */
#ifndef HPM_SPS_H
#define HPM_SPS_H

#include <jvmti.h>

/* Extension function ids (jvmtiExtensionFunctionInfo.id) */
#define HPM_SPS_VERSION_ID "com.github.hpm.sps.Version"
#define HPM_SPS_SAMPLE_ID  "com.github.hpm.sps.Sample"
#define HPM_SPS_VERSION 1

/* Frame types */
enum { HPM_SPS_FRAME_INTERPRETED = 0, HPM_SPS_FRAME_COMPILED = 1, HPM_SPS_FRAME_INLINED = 2, HPM_SPS_FRAME_NATIVE = 3 };
/* Thread states at selection */
enum { HPM_SPS_RUNNING = 0, HPM_SPS_WAITING = 1 /* blocked, waiting, sleeping, parked */, HPM_SPS_NATIVE = 2 };

typedef struct {
  jmethodID method;
  jint bci;        /* -1 if unknown / native */
  jint type;       /* HPM_SPS_FRAME_* */
} hpm_sps_frame;   /* 16 bytes on LP64 */

typedef struct {
  jlong os_tid;          /* kernel thread id */
  jint state;            /* HPM_SPS_* at selection */
  jint num_frames;       /* frames written (<= max_frames); 0 if the thread ended or had no Java frames */
  jint truncated;        /* 1 if the stack was deeper than max_frames */
  jlong latency_ns;      /* from the request to the moment the stack was walked; 0 if it was not walked */
  hpm_sps_frame* frames; /* set by the AGENT before the call: points at max_frames entries */
} hpm_sps_trace;         /* 40 bytes on LP64: os_tid@0 state@8 num_frames@12 truncated@16 latency_ns@24 frames@32 */

/* jvmtiError Version(jvmtiEnv* env, jint* version_out);
 *   -> writes HPM_SPS_VERSION. Errors: JVMTI_ERROR_NULL_POINTER.
 *
 * jvmtiError Sample(jvmtiEnv* env,
 *                   jint max_running,        // N threads to sample (<= 0: number of CPUs, os::active_processor_count)
 *                   jboolean include_waiting,// share the N samples with blocked/waiting/native threads
 *                                            // in proportion to their numbers (paper section 3.1)
 *                   jint max_frames,         // capacity of each trace's frames array (>= 0)
 *                   hpm_sps_trace* traces,   // agent-provided array
 *                   jint capacity,           // entries in traces (at most this many threads are sampled)
 *                   jint* count_out);        // traces filled: traces[0 .. *count_out)
 *
 * Selection: candidates are the live Java threads other than the caller, threads hidden from
 * external view (compiler threads, service threads), JVMTI agent threads (RunAgentThread) and
 * threads still starting or attaching. A candidate is "running" unless it is blocked or in
 * native. Without include_waiting, min(N, capacity, #running) running threads are chosen
 * uniformly at random. With include_waiting, N is shared: N * R / (R + W) running (rounded up or
 * down at random so that the expected share is exact) and the rest among the W blocked/native
 * threads that have Java frames. Running threads come first in traces[], then waiting ones.
 *
 * Sampling: returns when every selected thread has been sampled (running threads walk their own
 * stack at their next safepoint poll via a handshake; threads that are blocked/in native are
 * walked by the requester, as HotSpot's handshake mechanism already does for safe threads). No
 * global safepoint. Frames are leaf first, with inlined frames expanded (vframeStream), like
 * GetStackTrace. Must be called from an attached thread (a JVMTI agent thread or a thread
 * attached with AttachCurrentThread) in the live phase.
 *
 * Errors: JVMTI_ERROR_WRONG_PHASE (not live), JVMTI_ERROR_UNATTACHED_THREAD,
 * JVMTI_ERROR_INVALID_ENVIRONMENT, JVMTI_ERROR_NULL_POINTER (count_out, traces with capacity > 0,
 * or any traces[i].frames for i < capacity when max_frames > 0), JVMTI_ERROR_ILLEGAL_ARGUMENT
 * (max_frames < 0 or capacity < 0). *count_out is 0 when nothing was sampled.
 */

#endif /* HPM_SPS_H */
