/*
 * A loaded library's GOT slots for some functions, pointed at other functions.
 *
 * The dynamic linker fills each slot of a library's global offset table with the address of
 * the function it names (a JUMP_SLOT, called through the PLT, or a GLOB_DAT, a function
 * pointer). rewrite_got_slots finds the library's relocation tables through its link map,
 * and writes each wrapper over every slot that names the wrapper's function. A slot in the
 * read-only RELRO pages is opened for the write and closed again. Only that library's calls
 * change; every other object of the process keeps the real functions.
 *
 * Linux, glibc, ELF64 on x86-64 and AArch64; elsewhere it says so and changes nothing.
 */
#define _GNU_SOURCE
#include "_got_slots.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define SLOT_JUMP R_X86_64_JUMP_SLOT
#define SLOT_DATA R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define SLOT_JUMP R_AARCH64_JUMP_SLOT
#define SLOT_DATA R_AARCH64_GLOB_DAT
#endif

#if defined(SLOT_JUMP)

struct tables {
    const ElfW(Sym) *symbols;
    const char *names;
    const ElfW(Rela) *relocations[2];
    size_t sizes[2];
};

/* glibc stores most dynamic pointers relocated; a value below the load address is not. */
static const void *loaded(const struct link_map *map, ElfW(Addr) value) {
    return (const void *)(value < map->l_addr ? value + map->l_addr : value);
}

static int read_tables(const struct link_map *map, struct tables *out) {
    memset(out, 0, sizeof(*out));
    for (const ElfW(Dyn) *entry = map->l_ld; entry->d_tag != DT_NULL; ++entry) {
        switch (entry->d_tag) {
            case DT_SYMTAB: out->symbols = loaded(map, entry->d_un.d_ptr); break;
            case DT_STRTAB: out->names = loaded(map, entry->d_un.d_ptr); break;
            case DT_JMPREL: out->relocations[0] = loaded(map, entry->d_un.d_ptr); break;
            case DT_PLTRELSZ: out->sizes[0] = entry->d_un.d_val; break;
            case DT_RELA: out->relocations[1] = loaded(map, entry->d_un.d_ptr); break;
            case DT_RELASZ: out->sizes[1] = entry->d_un.d_val; break;
            default: break;
        }
    }
    return out->symbols != NULL && out->names != NULL;
}

struct relro {
    uintptr_t start, end; /* the pages the dynamic linker made read-only after relocating */
};

struct object_search {
    ElfW(Addr) base;
    struct relro found;
};

static int find_relro(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct object_search *search = data;
    if (info->dlpi_addr != search->base) {
        return 0;
    }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type == PT_GNU_RELRO) {
            uintptr_t start = info->dlpi_addr + header->p_vaddr;
            search->found.start = start & ~(page - 1);
            search->found.end = (start + header->p_memsz) & ~(page - 1);
        }
    }
    return 1;
}

static struct relro relro_of(const struct link_map *map) {
    struct object_search search = {map->l_addr, {0, 0}};
    dl_iterate_phdr(find_relro, &search);
    return search.found;
}

/* Writes one slot. A slot in the read-only RELRO pages is opened for the write and closed
   again; one in the writable .got.plt is written as it is. */
static int write_slot(void **slot, void *function, struct relro relro) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    void *start = (void *)((uintptr_t)slot & ~(page - 1));
    int read_only = (uintptr_t)start >= relro.start && (uintptr_t)start < relro.end;
    if (read_only && mprotect(start, page, PROT_READ | PROT_WRITE) != 0) {
        return -1;
    }
    __atomic_store_n(slot, function, __ATOMIC_SEQ_CST);
    if (read_only && mprotect(start, page, PROT_READ) != 0) {
        return -1;
    }
    return 0;
}

static void *wrapper_for(const char *name, const struct got_wrapper *wrappers) {
    for (; wrappers->name != NULL; ++wrappers) {
        if (strcmp(name, wrappers->name) == 0) {
            return wrappers->function;
        }
    }
    return NULL;
}

/* Rewrites the slots of one relocation table; returns how many, or -1 (errno set). */
static int rewrite(const struct link_map *map, const struct tables *tables, int which,
                   struct relro relro, const struct got_wrapper *wrappers) {
    const ElfW(Rela) *table = tables->relocations[which];
    size_t count = table == NULL ? 0 : tables->sizes[which] / sizeof(ElfW(Rela));
    int rewritten = 0;
    for (size_t i = 0; i < count; ++i) {
        unsigned long type = ELF64_R_TYPE(table[i].r_info);
        if (type != SLOT_JUMP && type != SLOT_DATA) {
            continue;
        }
        const char *name = tables->names + tables->symbols[ELF64_R_SYM(table[i].r_info)].st_name;
        void *function = wrapper_for(name, wrappers);
        if (function == NULL) {
            continue;
        }
        void **slot = (void **)(map->l_addr + table[i].r_offset);
        if (*slot != function && write_slot(slot, function, relro) != 0) {
            return -1;
        }
        ++rewritten;
    }
    return rewritten;
}

int rewrite_got_slots(const char *library, const struct got_wrapper *wrappers,
                      const char **reason) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL) {
        *reason = "the library is not loaded in this process";
        return -1;
    }
    struct link_map *map = NULL;
    struct tables tables;
    int total = -1;
    *reason = "the library's dynamic section could not be read";
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && read_tables(map, &tables)) {
        struct relro relro = relro_of(map);
        int first = rewrite(map, &tables, 0, relro, wrappers);
        int second = first < 0 ? -1 : rewrite(map, &tables, 1, relro, wrappers);
        total = second < 0 ? -1 : first + second;
        *reason = total < 0 ? "a GOT slot could not be made writable" : NULL;
    }
    dlclose(handle);
    return total;
}

#else

int rewrite_got_slots(const char *library, const struct got_wrapper *wrappers,
                      const char **reason) {
    (void)library;
    (void)wrappers;
    *reason = "rewriting a library's GOT is implemented for x86-64 and AArch64 only";
    return -1;
}

#endif
