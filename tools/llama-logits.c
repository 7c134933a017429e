// A driver of libllama for the model checks (tests/gemma/, tools/llamacpp-cpu.sh builds it):
// llama.cpp's own tokenization and teacher-forced logits, on its CPU backend, as files.
//
//   llama-logits tokenize MODEL TEXT_FILE OUT.i32   ids as llama.cpp encodes them (BOS as the
//                                                   model says, special text as plain text)
//   llama-logits tokenize-special MODEL TEXT_FILE OUT.i32   the same, control-token text parsed
//   llama-logits chat MODEL MESSAGE_FILE OUT.txt   the model's chat template applied to one user
//                                                   message ("system\0user": with a system one)
//   llama-logits logits MODEL IDS.i32 OUT.f32       [tokens][vocab] f32, every position
//   llama-logits system-info                        the CPU features ggml was built with
//
// Files are little-endian (the machine's order), as ninfer-wgpu's `tokenize -o` and `logits -o`.
#include "llama.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet(enum ggml_log_level level, const char *text, void *data) {
    (void)data;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static bool silent_progress(float progress, void *data) {
    (void)progress;
    (void)data;
    return true;
}

static void *read_all(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(*len + 1);
    if (!buf || fread(buf, 1, *len, f) != (size_t)*len) { fprintf(stderr, "%s: short read\n", path); exit(1); }
    buf[*len] = 0;
    fclose(f);
    return buf;
}

static void write_all(const char *path, const void *data, size_t bytes) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, bytes, f) != bytes) { perror(path); exit(1); }
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "system-info")) {
        llama_backend_init();
        puts(llama_print_system_info());
        return 0;
    }
    int special = argc > 1 && !strcmp(argv[1], "tokenize-special");
    int chat = argc > 1 && !strcmp(argv[1], "chat");
    if (argc != 5 || (strcmp(argv[1], "tokenize") && strcmp(argv[1], "logits") && !special && !chat)) {
        fprintf(stderr, "usage: llama-logits tokenize|tokenize-special|logits|chat MODEL INPUT OUTPUT | system-info\n");
        return 2;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    // LLAMA_NGL=99 with a GPU build: llama.cpp's own GPU backend (for measuring it, not for tests).
    mp.n_gpu_layers = getenv("LLAMA_NGL") ? atoi(getenv("LLAMA_NGL")) : 0;
    mp.progress_callback = silent_progress;
    // llama.cpp's plain kernels on every CPU: no "extra buffer types", which repack weights for
    // AVX2/AVX-512 gemm kernels or route products through AMX tiles (SIGSEGV/SIGILL on CPUs
    // with AMX). A reference whose kernels depended on the CPU CI lands on would be no
    // reference; docs/judging.md#a-models-logits.
    mp.use_extra_bufts = false;
    struct llama_model *model = llama_model_load_from_file(argv[2], mp);
    if (!model) { fprintf(stderr, "%s: not loaded\n", argv[2]); return 1; }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    long len;
    void *input = read_all(argv[3], &len);

    if (chat) {
        // INPUT: a user message, or "system\0user". OUTPUT: the model's own chat template applied
        // by llama_chat_apply_template, with the assistant's turn opened.
        const char *text = input;
        size_t first = strnlen(text, (size_t)len);
        struct llama_chat_message msgs[2];
        int n_msgs = 0;
        char *system = NULL, *user;
        if (first < (size_t)len) {
            system = strndup(text, first);
            user = strndup(text + first + 1, (size_t)len - first - 1);
            msgs[n_msgs++] = (struct llama_chat_message){"system", system};
        } else {
            user = strndup(text, (size_t)len);
        }
        msgs[n_msgs++] = (struct llama_chat_message){"user", user};
        const char *tmpl = llama_model_chat_template(model, NULL);
        if (!tmpl) { fprintf(stderr, "the model has no chat template\n"); return 1; }
        int cap = 2 * (int)len + 4096;
        char *buf = malloc((size_t)cap);
        int n = llama_chat_apply_template(tmpl, msgs, (size_t)n_msgs, true, buf, cap);
        if (n < 0 || n > cap) { fprintf(stderr, "chat template not applied (%d)\n", n); return 1; }
        write_all(argv[4], buf, (size_t)n);
        return 0;
    }

    if (strcmp(argv[1], "logits")) {
        int cap = (int)len + 16;
        llama_token *ids = malloc(sizeof(llama_token) * cap);
        int n = llama_tokenize(vocab, input, (int)len, ids, cap, true, special);
        if (n < 0) { fprintf(stderr, "tokenize failed (%d)\n", n); return 1; }
        write_all(argv[4], ids, sizeof(llama_token) * n);
        return 0;
    }

    int n = (int)(len / sizeof(llama_token));
    const llama_token *ids = input;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n < 16 ? 16 : n;
    cp.n_batch = cp.n_ctx;
    cp.n_ubatch = cp.n_ctx;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "no context\n"); return 1; }
    struct llama_batch batch = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        batch.token[i] = ids[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    if (llama_decode(ctx, batch)) { fprintf(stderr, "decode failed\n"); return 1; }
    int n_vocab = llama_vocab_n_tokens(vocab);
    float *out = malloc(sizeof(float) * (size_t)n_vocab * n);
    for (int i = 0; i < n; i++) memcpy(out + (size_t)i * n_vocab, llama_get_logits_ith(ctx, i), sizeof(float) * n_vocab);
    write_all(argv[4], out, sizeof(float) * (size_t)n_vocab * n);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
