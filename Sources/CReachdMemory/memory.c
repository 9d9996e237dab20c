#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <malloc.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>
#include "reachd_memory.h"

int reachd_release_memory(void) { return malloc_trim(0); }

int reachd_limit_arenas(int count) { return mallopt(M_ARENA_MAX, count); }

int reachd_whole_pages(uintptr_t start, size_t size, size_t page_size, uintptr_t *first, uintptr_t *end) {
    if (page_size == 0 || size > UINTPTR_MAX - start) return 0;
    uintptr_t offset = start % page_size;
    if (offset != 0 && start - offset > UINTPTR_MAX - page_size) return 0;
    uintptr_t from = offset == 0 ? start : start - offset + page_size;
    uintptr_t to = (start + size) - (start + size) % page_size;
    if (from >= to) return 0;
    *first = from;
    *end = to;
    return 1;
}

/// Whether the object's code was written when it was loaded (DT_TEXTREL, DF_TEXTREL): then its read-only
/// segments hold written pages too, which are its only copy.
static int has_text_relocations(const struct dl_phdr_info *info) {
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        if (header->p_type != PT_DYNAMIC) continue;
        for (const ElfW(Dyn) *entry = (const ElfW(Dyn) *)(info->dlpi_addr + header->p_vaddr); entry->d_tag != DT_NULL; entry++) {
            if (entry->d_tag == DT_TEXTREL || (entry->d_tag == DT_FLAGS && (entry->d_un.d_val & DF_TEXTREL))) return 1;
        }
    }
    return 0;
}

/// Whether one of the object's segments holds `address` (the vDSO's, which is no file's).
static int holds(const struct dl_phdr_info *info, uintptr_t address) {
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        uintptr_t start = info->dlpi_addr + header->p_vaddr;
        if (header->p_type == PT_LOAD && address >= start && address - start < header->p_memsz) return 1;
    }
    return 0;
}

struct unmapping {
    size_t page_size;
    uintptr_t vdso;
    size_t unmapped;
};

/// Called for each loaded object with the loader's lock held (no object is unloaded meanwhile).
static int unmap_read_only_segments(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct unmapping *unmapping = data;
    if ((unmapping->vdso != 0 && holds(info, unmapping->vdso)) || has_text_relocations(info)) return 0;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        uintptr_t first, end;
        if (header->p_type != PT_LOAD || (header->p_flags & PF_W)) continue;
        if (!reachd_whole_pages(info->dlpi_addr + header->p_vaddr, header->p_memsz, unmapping->page_size, &first, &end)) continue;
        if (madvise((void *)first, end - first, MADV_DONTNEED) == 0) unmapping->unmapped += end - first;
    }
    return 0;
}

size_t reachd_unmap_read_only_pages(void) {
    long page_size = sysconf(_SC_PAGESIZE);
    struct unmapping unmapping = { .page_size = page_size > 0 ? (size_t)page_size : 0, .vdso = getauxval(AT_SYSINFO_EHDR), .unmapped = 0 };
    if (unmapping.page_size == 0) return 0;
    dl_iterate_phdr(unmap_read_only_segments, &unmapping);
    return unmapping.unmapped;
}
