/*
 * Smoke-test agent for the patched JVM: finds the hpm SPS extension functions, checks Version,
 * then samples a running program from an agent thread and prints what it got.
 *
 *   -agentpath:libspstest.so[=mode=sps|jvmti|none,interval=10,samples=100,waiting=0|1,frames=64]
 *
 * mode=sps (default) calls com.github.hpm.sps.Sample every `interval` ms, `samples` times, and
 * before each call collects the traces threads published meanwhile (slots, see hpm_sps.h);
 * mode=jvmti calls GetAllStackTraces instead (conventional sampling at a global safepoint, for
 * comparison); mode=none only checks the extension list. Prints "spstest: PASS" or
 * "spstest: FAIL <why>" at VM death. Build: see smoke.sh.
 */
#include <jvmti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../hpm_sps.h"

static jvmtiEnv* jvmti;
static jvmtiExtensionFunction fn_version, fn_sample;
static char mode[16] = "sps";
static int interval_ms = 10, samples = 100, waiting = 0, max_frames = 64;
static const char* failure = NULL;
static long calls, requested, abandoned, traces, by_state[3], by_type[4], frames_total, empty, truncated;
static long long lat_sum, lat_max, call_sum, call_max;
static int printed;

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void print_frame(const hpm_sps_frame* f) {
  char *name = NULL, *sig = NULL;
  jclass cls;
  if ((*jvmti)->GetMethodName(jvmti, f->method, &name, NULL, NULL) == JVMTI_ERROR_NONE &&
      (*jvmti)->GetMethodDeclaringClass(jvmti, f->method, &cls) == JVMTI_ERROR_NONE &&
      (*jvmti)->GetClassSignature(jvmti, cls, &sig, NULL) == JVMTI_ERROR_NONE) {
    static const char* types[] = {"interpreted", "compiled", "inlined", "native"};
    printf("spstest:     %s.%s bci=%d %s\n", sig, name, f->bci, types[f->type & 3]);
  }
  (*jvmti)->Deallocate(jvmti, (unsigned char*)name);
  (*jvmti)->Deallocate(jvmti, (unsigned char*)sig);
}

/* Reads the traces threads published since the last call (DONE slots) and frees their slots. */
static void collect(hpm_sps_trace* t, int capacity) {
  for (int i = 0; i < capacity; i++) {
    int status = __atomic_load_n(&t[i].status, __ATOMIC_ACQUIRE);
    if (status == HPM_SPS_SLOT_ABANDONED) abandoned++;
    if (status != HPM_SPS_SLOT_DONE && status != HPM_SPS_SLOT_ABANDONED) continue;
    if (status == HPM_SPS_SLOT_DONE) {
      traces++; by_state[t[i].state % 3]++; frames_total += t[i].num_frames;
      if (t[i].num_frames == 0) empty++;
      if (t[i].truncated) truncated++;
      if (t[i].time_ns <= 0 || t[i].latency_ns < 0) failure = "trace without time";
      lat_sum += t[i].latency_ns; if (t[i].latency_ns > lat_max) lat_max = t[i].latency_ns;
      for (int j = 0; j < t[i].num_frames; j++) by_type[t[i].frames[j].type & 3]++;
      if (printed < 2 && t[i].num_frames > 0) {
        printed++;
        printf("spstest:   trace tid=%lld state=%d frames=%d truncated=%d latency=%lldns\n",
               (long long)t[i].os_tid, t[i].state, t[i].num_frames, t[i].truncated, (long long)t[i].latency_ns);
        for (int j = 0; j < t[i].num_frames && j < 12; j++) print_frame(&t[i].frames[j]);
      }
    }
    __atomic_store_n(&t[i].status, HPM_SPS_SLOT_FREE, __ATOMIC_RELEASE);
  }
}

static void sample_sps(hpm_sps_trace* t, int capacity) {
  jint count = -1;
  collect(t, capacity);
  long long t0 = now_ns();
  jvmtiError err = fn_sample(jvmti, (jint)0, (jboolean)waiting, (jint)max_frames, t, (jint)capacity, &count);
  long long dt = now_ns() - t0;
  if (err != JVMTI_ERROR_NONE) { failure = "Sample returned an error"; return; }
  calls++; call_sum += dt; if (dt > call_max) call_max = dt;
  requested += count;
}

static void sample_jvmti(void) {
  jvmtiStackInfo* info; jint n;
  long long t0 = now_ns();
  if ((*jvmti)->GetAllStackTraces(jvmti, max_frames, &info, &n) != JVMTI_ERROR_NONE) { failure = "GetAllStackTraces"; return; }
  long long dt = now_ns() - t0;
  calls++; call_sum += dt; if (dt > call_max) call_max = dt; traces += n;
  for (int i = 0; i < n; i++) frames_total += info[i].frame_count;
  (*jvmti)->Deallocate(jvmti, (unsigned char*)info);
}

static void JNICALL sampler(jvmtiEnv* env, JNIEnv* jni, void* arg) {
  enum { CAP = 64 };
  static hpm_sps_trace t[CAP];
  for (int i = 0; i < CAP; i++) t[i].frames = calloc(max_frames ? max_frames : 1, sizeof(hpm_sps_frame));
  for (int s = 0; s < samples && !failure; s++) {
    struct timespec d = {interval_ms / 1000, (interval_ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    if (strcmp(mode, "sps") == 0) sample_sps(t, CAP);
    else if (strcmp(mode, "jvmti") == 0) sample_jvmti();
  }
  /* Traces published after the last call; slots still PENDING stay owned by their threads. */
  if (strcmp(mode, "sps") == 0) collect(t, CAP);
}

static void JNICALL vm_init(jvmtiEnv* env, JNIEnv* jni, jthread thread) {
  jint n; jvmtiExtensionFunctionInfo* fi;
  if ((*jvmti)->GetExtensionFunctions(jvmti, &n, &fi) != JVMTI_ERROR_NONE) { failure = "GetExtensionFunctions"; return; }
  for (int i = 0; i < n; i++) {
    printf("spstest: extension %s (%d params)\n", fi[i].id, fi[i].param_count);
    if (strcmp(fi[i].id, HPM_SPS_VERSION_ID) == 0) fn_version = fi[i].func;
    if (strcmp(fi[i].id, HPM_SPS_SAMPLE_ID) == 0) fn_sample = fi[i].func;
  }
  jint version = 0;
  if (fn_version && fn_sample) {
    if (fn_version(jvmti, &version) != JVMTI_ERROR_NONE || version != HPM_SPS_VERSION) { failure = "Version"; return; }
    printf("spstest: version %d\n", version);
  } else if (strcmp(mode, "jvmti") != 0) {  /* the jvmti baseline also runs on an unpatched JVM */
    failure = "extension functions not found (unpatched JVM?)";
    return;
  }
  jclass tc = (*jni)->FindClass(jni, "java/lang/Thread");
  jobject th = (*jni)->NewObject(jni, tc, (*jni)->GetMethodID(jni, tc, "<init>", "(Ljava/lang/String;)V"),
                                 (*jni)->NewStringUTF(jni, "spstest-sampler"));
  if ((*jvmti)->RunAgentThread(jvmti, th, sampler, NULL, JVMTI_THREAD_NORM_PRIORITY) != JVMTI_ERROR_NONE) failure = "RunAgentThread";
}

static void JNICALL vm_death(jvmtiEnv* env, JNIEnv* jni) {
  printf("spstest: mode=%s calls=%ld traces=%ld (running %ld, waiting %ld, native %ld) frames=%ld "
         "(interpreted %ld, compiled %ld, inlined %ld, native %ld) empty=%ld truncated=%ld\n",
         mode, calls, traces, by_state[0], by_state[1], by_state[2], frames_total,
         by_type[0], by_type[1], by_type[2], by_type[3], empty, truncated);
  if (calls) printf("spstest: requested=%ld collected=%ld abandoned=%ld\n", requested, traces, abandoned);
  if (calls) printf("spstest: call time mean %lldus max %lldus; sample latency mean %lldus max %lldus\n",
                    call_sum / calls / 1000, call_max / 1000, traces ? lat_sum / traces / 1000 : 0, lat_max / 1000);
  if (!failure && strcmp(mode, "sps") == 0 && (calls == 0 || traces == 0 || frames_total == 0)) failure = "no samples";
  printf("spstest: %s%s\n", failure ? "FAIL " : "PASS", failure ? failure : "");
  fflush(stdout);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char* options, void* reserved) {
  for (char* o = options ? strtok(options, ",") : NULL; o; o = strtok(NULL, ",")) {
    if (sscanf(o, "mode=%15s", mode) == 1) continue;
    if (sscanf(o, "interval=%d", &interval_ms) || sscanf(o, "samples=%d", &samples) ||
        sscanf(o, "waiting=%d", &waiting) || sscanf(o, "frames=%d", &max_frames)) continue;
    fprintf(stderr, "spstest: unknown option %s\n", o);
    return JNI_ERR;
  }
  if ((*vm)->GetEnv(vm, (void**)&jvmti, JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
  jvmtiEventCallbacks cb = {0};
  cb.VMInit = vm_init;
  cb.VMDeath = vm_death;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof(cb));
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
  return JNI_OK;
}
