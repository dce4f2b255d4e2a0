/*
 * Smoke-test agent for the patched JVM: finds the hpm SPS extension functions, checks Version,
 * then samples a running program from an agent thread and prints what it got.
 *
 *   -agentpath:libspstest.so[=mode=sps|jvmti|none,interval=10,samples=100,waiting=0|1,frames=64]
 *
 * mode=sps (default) calls com.github.hpm.sps.Sample every `interval` ms, `samples` times, and
 * before each call collects the traces threads published meanwhile (slots, see hpm_sps.h);
 * mode=isps calls IspsSample instead, IspsRetrieve every 50 calls and once more (waiting) at the
 * end, and checks every trace's chain of callers (indices in range, callers after callees);
 * redefine=1 also redefines class Stress with its own bytes every 100 calls (RedefineClasses
 * while its methods are on sampled stacks);
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
static jvmtiExtensionFunction fn_version, fn_sample, fn_isps_sample, fn_isps_retrieve, fn_isps_stats;
static char mode[16] = "sps";
static int interval_ms = 10, samples = 100, waiting = 0, max_frames = 64, redefine = 0;
static long redefinitions, max_depth;
static unsigned char* stress_bytes;
static long stress_len;
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

/* Collects the completed isps traces and checks their shape. */
static void retrieve_isps(int wait) {
  static hpm_isps_frame* f;
  static hpm_isps_trace* t;
  if (!f) {
    f = calloc(HPM_ISPS_MAX_FRAMES, sizeof(hpm_isps_frame));
    t = calloc(HPM_ISPS_MAX_TRACES, sizeof(hpm_isps_trace));
  }
  for (int round = 0; round < 64; round++) {
    jint nf = 0, nt = 0, pending = 0;
    if (fn_isps_retrieve(jvmti, (jboolean)wait, f, (jint)HPM_ISPS_MAX_FRAMES, t, (jint)HPM_ISPS_MAX_TRACES,
                         &nf, &nt, &pending) != JVMTI_ERROR_NONE) { failure = "IspsRetrieve returned an error"; return; }
    for (int i = 0; i < nt; i++) {
      traces++; by_state[t[i].state % 3]++;
      if (t[i].truncated) truncated++;
      if (t[i].time_ns <= 0 || t[i].latency_ns < 0) failure = "trace without time";
      lat_sum += t[i].latency_ns; if (t[i].latency_ns > lat_max) lat_max = t[i].latency_ns;
      if (t[i].top < 0) { empty++; continue; }
      if (t[i].top >= nf) { failure = "trace top out of range"; return; }
      long depth = 0;
      for (int at = t[i].top; at >= 0; at = f[at].parent) {
        if (f[at].parent >= nf || (f[at].parent >= 0 && f[at].parent <= at)) { failure = "bad caller index"; return; }
        if (f[at].method == NULL) { failure = "frame without method"; return; }
        by_type[f[at].type & 3]++; frames_total++; depth++;
      }
      if (depth > max_depth) max_depth = depth;
      if (printed < 2) {
        printed++;
        printf("spstest:   trace tid=%lld state=%d frames=%ld truncated=%d latency=%lldns\n",
               (long long)t[i].os_tid, t[i].state, depth, t[i].truncated, (long long)t[i].latency_ns);
        int k = 0;
        for (int at = t[i].top; at >= 0 && k < 12; at = f[at].parent, k++) {
          hpm_sps_frame sf = { f[at].method, f[at].bci, f[at].type };
          print_frame(&sf);
        }
      }
    }
    if (pending == 0 || (!wait && nt == 0)) break;
  }
}

static void sample_isps(void) {
  jint count = -1;
  long long t0 = now_ns();
  jvmtiError err = fn_isps_sample(jvmti, (jint)0, (jboolean)waiting, &count);
  long long dt = now_ns() - t0;
  if (err != JVMTI_ERROR_NONE) { failure = "IspsSample returned an error"; return; }
  calls++; call_sum += dt; if (dt > call_max) call_max = dt;
  requested += count;
  if (calls % 50 == 0) retrieve_isps(0);
}

/* Redefines class Stress with its own bytes: its running methods become old versions. */
static void redefine_stress(JNIEnv* jni) {
  jclass c = (*jni)->FindClass(jni, "Stress");
  if (c == NULL) { (*jni)->ExceptionClear(jni); return; }
  jvmtiClassDefinition def = { c, (jint)stress_len, stress_bytes };
  if ((*jvmti)->RedefineClasses(jvmti, 1, &def) != JVMTI_ERROR_NONE) failure = "RedefineClasses";
  else redefinitions++;
  (*jni)->DeleteLocalRef(jni, c);
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
    else if (strcmp(mode, "isps") == 0) sample_isps();
    else if (strcmp(mode, "jvmti") == 0) sample_jvmti();
    if (redefine && stress_bytes && s % 100 == 99) redefine_stress(jni);
  }
  /* Traces published after the last call; slots still PENDING stay owned by their threads. */
  if (strcmp(mode, "sps") == 0) collect(t, CAP);
  if (strcmp(mode, "isps") == 0 && !failure) {
    retrieve_isps(1);
    jlong c[HPM_ISPS_STAT_COUNT] = {0};
    if (fn_isps_stats(jvmti, c, HPM_ISPS_STAT_COUNT) != JVMTI_ERROR_NONE) failure = "IspsStats";
    printf("spstest: isps samples=%lld refused=%lld frames eager=%lld lazy=%lld finish=%lld out=%lld dropped=%lld max-depth=%ld redefinitions=%ld\n",
           (long long)c[0], (long long)c[1], (long long)c[2], (long long)c[3], (long long)c[4], (long long)c[5],
           (long long)c[6], max_depth, redefinitions);
  }
}

static void JNICALL vm_init(jvmtiEnv* env, JNIEnv* jni, jthread thread) {
  jint n; jvmtiExtensionFunctionInfo* fi;
  if ((*jvmti)->GetExtensionFunctions(jvmti, &n, &fi) != JVMTI_ERROR_NONE) { failure = "GetExtensionFunctions"; return; }
  for (int i = 0; i < n; i++) {
    printf("spstest: extension %s (%d params)\n", fi[i].id, fi[i].param_count);
    if (strcmp(fi[i].id, HPM_SPS_VERSION_ID) == 0) fn_version = fi[i].func;
    if (strcmp(fi[i].id, HPM_SPS_SAMPLE_ID) == 0) fn_sample = fi[i].func;
    if (strcmp(fi[i].id, HPM_ISPS_SAMPLE_ID) == 0) fn_isps_sample = fi[i].func;
    if (strcmp(fi[i].id, HPM_ISPS_RETRIEVE_ID) == 0) fn_isps_retrieve = fi[i].func;
    if (strcmp(fi[i].id, HPM_ISPS_STATS_ID) == 0) fn_isps_stats = fi[i].func;
  }
  jint version = 0;
  if (strcmp(mode, "isps") == 0 && !(fn_isps_sample && fn_isps_retrieve && fn_isps_stats)) {
    failure = "isps extension functions not found";
    return;
  }
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
  if (!failure && strcmp(mode, "jvmti") != 0 && strcmp(mode, "none") != 0 && (calls == 0 || traces == 0 || frames_total == 0))
    failure = "no samples";
  if (!failure && redefine && redefinitions == 0) failure = "no redefinition";
  printf("spstest: %s%s\n", failure ? "FAIL " : "PASS", failure ? failure : "");
  fflush(stdout);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char* options, void* reserved) {
  for (char* o = options ? strtok(options, ",") : NULL; o; o = strtok(NULL, ",")) {
    if (sscanf(o, "mode=%15s", mode) == 1) continue;
    if (sscanf(o, "interval=%d", &interval_ms) || sscanf(o, "samples=%d", &samples) ||
        sscanf(o, "waiting=%d", &waiting) || sscanf(o, "frames=%d", &max_frames) ||
        sscanf(o, "redefine=%d", &redefine)) continue;
    fprintf(stderr, "spstest: unknown option %s\n", o);
    return JNI_ERR;
  }
  if ((*vm)->GetEnv(vm, (void**)&jvmti, JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
  if (redefine) {
    /* The class file of Stress, from the class path's first directory (smoke.sh's). */
    const char* cp = getenv("SPSTEST_STRESS_CLASS");
    FILE* fp = cp ? fopen(cp, "rb") : NULL;
    if (fp) {
      fseek(fp, 0, SEEK_END); stress_len = ftell(fp); fseek(fp, 0, SEEK_SET);
      stress_bytes = malloc(stress_len);
      if (fread(stress_bytes, 1, stress_len, fp) != (size_t)stress_len) { free(stress_bytes); stress_bytes = NULL; }
      fclose(fp);
    }
    jvmtiCapabilities caps = {0};
    caps.can_redefine_classes = 1;
    if (!stress_bytes || (*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) {
      fprintf(stderr, "spstest: redefine=1 needs SPSTEST_STRESS_CLASS and can_redefine_classes\n");
      return JNI_ERR;
    }
  }
  jvmtiEventCallbacks cb = {0};
  cb.VMInit = vm_init;
  cb.VMDeath = vm_death;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof(cb));
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
  return JNI_OK;
}
