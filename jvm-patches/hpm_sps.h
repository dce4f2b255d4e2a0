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
#define HPM_ISPS_SAMPLE_ID   "com.github.hpm.sps.IspsSample"
#define HPM_ISPS_RETRIEVE_ID "com.github.hpm.sps.IspsRetrieve"
#define HPM_ISPS_STATS_ID    "com.github.hpm.sps.IspsStats"
#define HPM_SPS_VERSION 3

/* Frame types */
enum { HPM_SPS_FRAME_INTERPRETED = 0, HPM_SPS_FRAME_COMPILED = 1, HPM_SPS_FRAME_INLINED = 2, HPM_SPS_FRAME_NATIVE = 3 };
/* Slot status (hpm_sps_trace.status): who owns a slot */
enum {
  HPM_SPS_SLOT_FREE = 0,      /* the agent's; Sample may use it */
  HPM_SPS_SLOT_PENDING = 1,   /* requested: the JVM's until the thread has sampled itself */
  HPM_SPS_SLOT_DONE = 2,      /* trace written; the agent reads it, then stores FREE */
  HPM_SPS_SLOT_ABANDONED = 3  /* the thread ended before it sampled itself; the agent stores FREE */
};
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
  jint num_frames;       /* frames written (<= max_frames); 0 if the thread had no Java frames */
  jint truncated;        /* 1 if the stack was deeper than max_frames */
  volatile jint status;  /* HPM_SPS_SLOT_*: read with acquire, written with release (both sides) */
  jlong latency_ns;      /* from the request to the moment the stack was walked */
  hpm_sps_frame* frames; /* set by the AGENT once: points at max_frames entries */
  jlong time_ns;         /* CLOCK_MONOTONIC (os::javaTimeNanos) when the stack was walked */
  void* thread;          /* the JVM's (the sampled thread); opaque to the agent */
} hpm_sps_trace;         /* 56 bytes on LP64: os_tid@0 state@8 num_frames@12 truncated@16 status@20
                            latency_ns@24 frames@32 time_ns@40 thread@48 */

/* jvmtiError Version(jvmtiEnv* env, jint* version_out);
 *   -> writes HPM_SPS_VERSION. Errors: JVMTI_ERROR_NULL_POINTER.
 *
 * jvmtiError Sample(jvmtiEnv* env,
 *                   jint max_running,        // N threads to sample (<= 0: number of CPUs, os::active_processor_count)
 *                   jboolean include_waiting,// share the N samples with blocked/waiting/native threads
 *                                            // in proportion to their numbers (paper section 3.1)
 *                   jint max_frames,         // capacity of each trace's frames array (>= 0)
 *                   hpm_sps_trace* traces,   // the agent's slots (zeroed = FREE at first)
 *                   jint capacity,           // number of slots
 *                   jint* count_out);        // samples requested by this call
 *
 * Slots: the agent owns the array for the life of the VM, or until no slot is PENDING. Sample
 * uses FREE slots only (at most N per call), so the agent's capacity bounds the samples in
 * flight. Before each call the agent should consume DONE and ABANDONED slots (read the trace,
 * then store FREE with release semantics). A slot stays PENDING until its thread reaches a poll;
 * Sample turns it ABANDONED when that thread has ended (a terminated thread processes no
 * handshakes). An agent that stops sampling must not free slots that are still PENDING.
 *
 * Selection: candidates are the live Java threads other than the caller, threads hidden from
 * external view (compiler threads, service threads), JVMTI agent threads (RunAgentThread),
 * threads still starting or attaching, and threads whose previous sample is still PENDING. A
 * candidate is "running" unless it is blocked or in native. Without include_waiting,
 * min(N, free slots, #running) running threads are chosen uniformly at random. With
 * include_waiting, N is shared: N * R / (R + W) running (rounded up or down at random so that
 * the expected share is exact) and the rest among the W blocked/native threads that have Java
 * frames.
 *
 * Sampling: each chosen running thread gets an asynchronous handshake and walks its own stack at
 * its next safepoint poll (self-sampling), then stores DONE; Sample does not wait for it, and no
 * other thread is affected. Blocked and native threads are walked by the requester in one
 * handshake with just those threads (they are handshake safe) and are DONE when Sample returns.
 * No global safepoint. Frames are leaf first, with inlined frames expanded (vframeStream), like
 * GetStackTrace. Must be called from an attached thread (a JVMTI agent thread or a thread
 * attached with AttachCurrentThread) in the live phase.
 *
 * Errors: JVMTI_ERROR_WRONG_PHASE (not live), JVMTI_ERROR_UNATTACHED_THREAD,
 * JVMTI_ERROR_INVALID_ENVIRONMENT, JVMTI_ERROR_NULL_POINTER (count_out, traces with capacity > 0,
 * or a FREE slot's frames when max_frames > 0), JVMTI_ERROR_ILLEGAL_ARGUMENT (max_frames < 0 or
 * capacity < 0). *count_out is 0 when nothing was requested.
 *
 * Version history: 1 = synchronous (Sample waited for every chosen thread); 2 = asynchronous
 * self-sampling with slots; 3 = incremental stack tracing (below), Sample unchanged.
 */

/* ---- Incremental stack tracing (version 3; paper section 5; src/hotspot/share/prims/jvmtiHpmIsps.*) ----
 *
 * A sample decodes a thread's top 16 Java frames only; each frame below is decoded once, when the thread
 * returns into it (or unwinds into it, or a stack walker reaches it), and is shared by every
 * sample taken above it. The return interception is HotSpot's own stack watermark barrier
 * (JEP 376) with a watermark kind of its own, not a patched return address. Traces are complete
 * once their thread's stack has been decoded to the bottom: IspsRetrieve does that (once per
 * thread, for all of its traces) and hands them out; a thread that ends hands its traces over
 * by itself (its frames were all decoded as they returned).
 */
#define HPM_ISPS_MAX_FRAMES (1 << 18)  /* frames a thread holds until retrieved; IspsRetrieve's minimum */
#define HPM_ISPS_MAX_TRACES (1 << 14)  /* traces a thread holds until retrieved; IspsRetrieve's minimum */

typedef struct {
  jmethodID method;
  jint bci;        /* -1 if unknown / native */
  jint type;       /* HPM_SPS_FRAME_* */
  jint parent;     /* index of the caller in the same array (always > this frame's), -1: the bottom */
  jint reserved;
} hpm_isps_frame;  /* 24 bytes on LP64 */

typedef struct {
  jlong os_tid;     /* kernel thread id */
  jlong time_ns;    /* CLOCK_MONOTONIC (os::javaTimeNanos) when the top frames were decoded */
  jlong latency_ns; /* from the request to that moment */
  jint state;       /* HPM_SPS_* at selection */
  jint top;         /* index of the leaf frame in the frames array; -1: the thread had no Java frame */
  jint truncated;   /* 1: the bottom of the stack is missing (the thread's frame budget was full) */
  jint reserved;
} hpm_isps_trace;   /* 40 bytes on LP64: os_tid@0 time_ns@8 latency_ns@16 state@24 top@28 truncated@32 */

/* IspsStats counters, in this order */
enum {
  HPM_ISPS_STAT_SAMPLES = 0,    /* traces started */
  HPM_ISPS_STAT_REFUSED,        /* samples not taken: the thread's budget was full (retrieve more often) */
  HPM_ISPS_STAT_FRAMES_EAGER,   /* physical frames decoded by samples */
  HPM_ISPS_STAT_FRAMES_LAZY,    /* physical frames decoded as they were exposed (returns, unwinding, walks) */
  HPM_ISPS_STAT_FRAMES_FINISH,  /* physical frames decoded to complete traces (retrieve) */
  HPM_ISPS_STAT_TRACES_OUT,     /* traces handed out */
  HPM_ISPS_STAT_TRACES_DROPPED, /* traces dropped: nobody retrieved them and the JVM's queue was full */
  HPM_ISPS_STAT_COUNT
};

/* jvmtiError IspsSample(jvmtiEnv* env, jint max_running, jboolean include_waiting, jint* count_out);
 *   Selects threads exactly as Sample does (a thread with a handshake operation still queued, e.g.
 *   its previous request, counts as pending). A chosen running thread decodes its own top frames at
 *   its next poll (asynchronous); blocked and native threads are done by the caller before it
 *   returns. A thread holding HPM_ISPS_MAX_FRAMES / 2 frames or HPM_ISPS_MAX_TRACES traces is not
 *   sampled (HPM_ISPS_STAT_REFUSED). Errors as Sample.
 *
 * jvmtiError IspsRetrieve(jvmtiEnv* env, jboolean wait,
 *                         hpm_isps_frame* frames, jint frame_capacity,
 *                         hpm_isps_trace* traces, jint trace_capacity,
 *                         jint* frame_count, jint* trace_count, jint* pending_out);
 *   Completes pending traces and hands out completed ones. Threads that hold traces and are blocked
 *   or in native are completed by the caller now; running ones complete their own at their next
 *   poll: asynchronously (delivered by a later call) unless `wait`, then the caller waits for them.
 *   Completed traces are copied whole per thread while they fit (frames first, `parent` and `top`
 *   indices into `frames`); *pending_out = traces not handed out yet (queued, or being completed
 *   by their threads). Capacities must be at least HPM_ISPS_MAX_FRAMES / HPM_ISPS_MAX_TRACES
 *   (JVMTI_ERROR_ILLEGAL_ARGUMENT). Completed traces nobody retrieves are kept up to 16 x
 *   HPM_ISPS_MAX_FRAMES frames, then dropped (HPM_ISPS_STAT_TRACES_DROPPED).
 *
 * jvmtiError IspsStats(jvmtiEnv* env, jlong* counters, jint count);
 *   Writes the first `count` HPM_ISPS_STAT_* counters (process totals; zero beyond the known ones).
 */

#endif /* HPM_SPS_H */
