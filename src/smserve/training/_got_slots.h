/* A loaded library's GOT slots pointed at other functions (_got_slots.c). */
#ifndef SMSERVE_GOT_SLOTS_H
#define SMSERVE_GOT_SLOTS_H

/* A function the library imports (`name`) and what its calls should reach instead. */
struct got_wrapper {
    const char *name;
    void *function;
};

/* Points every GOT slot of the loaded `library` that names one of `wrappers` (ended by a
   NULL name) at that wrapper. Returns how many slots now do, or -1 with `*reason` set. */
int rewrite_got_slots(const char *library, const struct got_wrapper *wrappers,
                      const char **reason);

#endif
