/* help.h - the commands' help text and what is generated from it (help.c). */
#ifndef INGOT_CLI_HELP_H
#define INGOT_CLI_HELP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

bool help_known(const char *cmd);
/* "usage: ingot CMD ..." lines of one command. */
void help_synopsis(FILE *o, const char *cmd);
/* Every command with its summary. */
void help_overview(FILE *o);
/* The whole help of one command; -1 if there is no such command. */
int help_command(FILE *o, const char *cmd);
/* ingot.1 and ingot-CMD.1 for every command into dir; 0 or -1 (errno set). */
int help_man(const char *dir, const char *version);
/* The completion script for "bash" or "zsh". */
void help_completion(FILE *o, const char *shell);
/* The nearest command or option of cmd to a mistyped one, or NULL if none is close. */
const char *help_suggest_command(const char *typo);
const char *help_suggest_option(const char *cmd, const char *typo);
/* Levenshtein distance ((size_t)-1 beyond 256 bytes); whether d is a plausible typo of len. */
size_t edit_distance(const char *a, size_t na, const char *b, size_t nb);
bool close_enough(size_t d, size_t len);

#endif
