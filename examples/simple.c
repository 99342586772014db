/* simple MODEL PROMPT N: prints the greedy continuation (N tokens) of PROMPT.
 * Self-contained C99: cc -std=c99 simple.c $(pkg-config --cflags --libs qinfer) */
#include <qinfer/qinfer.h>

#include <stdio.h>
#include <stdlib.h>

static int print_piece(const char* text, size_t length, void* user_data) {
  (void)user_data;
  fwrite(text, 1, length, stdout);
  fflush(stdout);
  return 1; /* keep going */
}

int main(int argc, char** argv) {
  qinfer_model* model = NULL;
  qinfer_session* session = NULL;
  qinfer_generate_options options = qinfer_generate_options_default();
  int rc = 1;
  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL PROMPT N\n", argv[0]);
    return 2;
  }
  options.max_tokens = atoi(argv[3]);
  options.temperature = 0.0f; /* greedy */
  if (qinfer_model_load(argv[1], NULL, &model) != QINFER_OK ||
      qinfer_session_new(model, NULL, &session) != QINFER_OK ||
      qinfer_generate(session, argv[2], &options, print_piece, NULL) != QINFER_OK) {
    fprintf(stderr, "error: %s\n", qinfer_last_error());
  } else {
    printf("\n");
    rc = 0;
  }
  qinfer_session_free(session);
  qinfer_model_free(model);
  return rc;
}
