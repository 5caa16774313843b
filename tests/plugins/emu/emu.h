/* SPDX-License-Identifier: MIT */
/*
 * A small CPU emulator for penny's kernels (unit tests without a GPU).
 * Every CUDA thread is a fiber (ucontext) of one OS thread; fibers switch at
 * __syncthreads, at every poll of a flag, and at random points before stores
 * into a peer, so the ranks' kernels interleave in many orders; with stall
 * set, one rank at a time sits out a few rounds, so that a rank runs ahead
 * of another by more than a store or two.  Each rank
 * has its own stream (a queue of launches run one after another), so ranks
 * drift apart by whole kernels as on real GPUs.  It checks the protocols,
 * index arithmetic and tails; it cannot check the GPU memory model.
 *
 * Include this before the kernel sources, in one C++ translation unit.
 */
#ifndef PENNY_EMU_H
#define PENNY_EMU_H

#define PN_EMU 1
#define __global__
#define __device__
#define __host__
#define __forceinline__
#define __align__(n) alignas(n)

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <vector>

/*
 * Switching fibers: glibc's swapcontext saves and restores the signal mask,
 * a system call on every switch, which was most of these tests' time.  On
 * x86-64 a switch saves the callee-saved registers, the SSE control word
 * and the x87 control word on the old stack and loads the new stack pointer,
 * no system call (the same switches in the same order: the interleavings do
 * not change).  Elsewhere, or with -DEMU_UCONTEXT, ucontext as before.
 */
#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
#define EMU_FAST_SWITCH 1
struct emu_ctx {
	void *sp;
};
extern "C" void emu_ctx_switch(void **save_sp, void *load_sp);
__asm__(".text\n"
	".globl emu_ctx_switch\n"
	".type emu_ctx_switch, @function\n"
	"emu_ctx_switch:\n"
	"	pushq %rbp\n"
	"	pushq %rbx\n"
	"	pushq %r12\n"
	"	pushq %r13\n"
	"	pushq %r14\n"
	"	pushq %r15\n"
	"	subq $8, %rsp\n"
	"	stmxcsr (%rsp)\n"
	"	fnstcw 4(%rsp)\n"
	"	movq %rsp, (%rdi)\n"
	"	movq %rsi, %rsp\n"
	"	ldmxcsr (%rsp)\n"
	"	fldcw 4(%rsp)\n"
	"	addq $8, %rsp\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %rbx\n"
	"	popq %rbp\n"
	"	ret\n"
	".size emu_ctx_switch, .-emu_ctx_switch\n");
#else
struct emu_ctx {
	ucontext_t uc;
};
#endif

typedef void (*emu_kernel_fn)(const void *args);

struct emu_block {
	unsigned nthreads, arrived, gen;
	int or_acc, or_result;
	alignas(16) char smem[2048]; /* __shared__ (PN_SHARED) */
};

struct emu_fiber {
	struct emu_ctx ctx;
	char *stack;
	unsigned tid, bid, ntid, nbid;
	size_t smem_off; /* the next shared variable's place in blk->smem */
	int done;
	struct emu_block *blk;
	struct emu_launch *launch;
};

struct emu_launch {
	emu_kernel_fn fn;
	unsigned grid, block;
	std::vector<char> args;
	std::vector<emu_block> blocks;
	std::vector<emu_fiber *> fibers;
	unsigned live;
};

struct emu_state {
	struct emu_ctx sched;
	emu_fiber *cur;
	uint64_t clock_ns;
	uint64_t rng;
	unsigned yield_every; /* random yield before 1 in N peer stores (0: never) */
	int stall;		/* now and then hold one rank back for a few rounds */
	int stall_rank, stall_left;
	std::vector<std::vector<emu_launch *> > streams; /* per rank */
	std::vector<char *> stacks;			 /* freed fiber stacks, for reuse */
	uint64_t switches;
};

static emu_state emu;

static inline uint32_t emu_rand(void)
{
	emu.rng = emu.rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(emu.rng >> 33);
}

/* from the running fiber to the scheduler, and back */
static inline void emu_to_sched(emu_fiber *f)
{
#ifdef EMU_FAST_SWITCH
	emu_ctx_switch(&f->ctx.sp, emu.sched.sp);
#else
	swapcontext(&f->ctx.uc, &emu.sched.uc);
#endif
}

static inline void emu_to_fiber(emu_fiber *f)
{
#ifdef EMU_FAST_SWITCH
	emu_ctx_switch(&emu.sched.sp, f->ctx.sp);
#else
	swapcontext(&emu.sched.uc, &f->ctx.uc);
#endif
}

static inline void emu_yield(void)
{
	emu_fiber *f = emu.cur;

	emu.switches++;
	emu_to_sched(f);
}

static void emu_trampoline(void)
{
	emu_fiber *f = emu.cur;

	f->launch->fn(f->launch->args.data());
	f->done = 1;
#ifdef EMU_FAST_SWITCH
	emu_to_sched(f); /* never resumed */
	abort();
#endif
	/* uc_link returns to the scheduler */
}

#define EMU_STACK (64 * 1024)

static char *emu_stack_get(void)
{
	char *s;

	if (emu.stacks.empty())
		return (char *)malloc(EMU_STACK);
	s = emu.stacks.back();
	emu.stacks.pop_back();
	return s;
}

/* A new fiber's context: its first switch in starts emu_trampoline. */
static void emu_ctx_init(emu_fiber *f)
{
#ifdef EMU_FAST_SWITCH
	/* the frame emu_ctx_switch pops: control words, six registers, the
	 * return address; the trampoline starts as if called (rsp % 16 == 8) */
	uintptr_t top = ((uintptr_t)f->stack + EMU_STACK) & ~(uintptr_t)15;
	void **sp = (void **)(top - 16);
	uint32_t cw[2];

	sp[1] = NULL;
	sp[0] = (void *)emu_trampoline;
	sp -= 6;
	memset(sp, 0, 6 * sizeof(void *));
	sp -= 1;
	__asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(cw[0]), "=m"(cw[1]));
	memcpy(sp, cw, sizeof(cw));
	f->ctx.sp = sp;
#else
	getcontext(&f->ctx.uc);
	f->ctx.uc.uc_stack.ss_sp = f->stack;
	f->ctx.uc.uc_stack.ss_size = EMU_STACK;
	f->ctx.uc.uc_link = &emu.sched.uc;
	makecontext(&f->ctx.uc, emu_trampoline, 0);
#endif
}

static void emu_start(emu_launch *l)
{
	l->blocks.assign(l->grid, emu_block());
	for (unsigned b = 0; b < l->grid; b++) {
		l->blocks[b].nthreads = l->block;
		l->blocks[b].arrived = l->blocks[b].gen = 0;
		l->blocks[b].or_acc = l->blocks[b].or_result = 0;
		/* shared memory starts as garbage, as on a GPU */
		memset(l->blocks[b].smem, 0xA5, sizeof(l->blocks[b].smem));
	}
	for (unsigned b = 0; b < l->grid; b++)
		for (unsigned t = 0; t < l->block; t++) {
			emu_fiber *f = new emu_fiber();

			f->stack = emu_stack_get();
			f->tid = t;
			f->bid = b;
			f->ntid = l->block;
			f->nbid = l->grid;
			f->done = 0;
			f->smem_off = 0;
			f->blk = &l->blocks[b];
			f->launch = l;
			emu_ctx_init(f);
			l->fibers.push_back(f);
		}
	l->live = l->grid * l->block;
}

/* Queue a kernel on rank's stream (args copied). */
static void emu_launch_kernel(int rank, emu_kernel_fn fn, unsigned grid, unsigned block,
			      const void *args, size_t len)
{
	emu_launch *l = new emu_launch();

	l->fn = fn;
	l->grid = grid;
	l->block = block;
	l->args.assign((const char *)args, (const char *)args + len);
	l->live = 0;
	if ((int)emu.streams.size() <= rank)
		emu.streams.resize(rank + 1);
	emu.streams[rank].push_back(l);
}

/* Run every stream to completion; returns the number of fiber switches. */
static uint64_t emu_run(void)
{
	std::vector<emu_fiber *> ready;
	uint64_t sw0 = emu.switches;

	for (;;) {
		bool held = false;

		ready.clear();
		if (emu.stall && !emu.stall_left && emu_rand() % 4 == 0) {
			emu.stall_rank = (int)(emu_rand() % (emu.streams.size() + 1));
			emu.stall_left = 1 + (int)(emu_rand() % 16);
		}
		for (size_t r = 0; r < emu.streams.size(); r++) {
			std::vector<emu_launch *> &q = emu.streams[r];

			while (!q.empty() && q.front()->fibers.size() && !q.front()->live) {
				emu_launch *l = q.front();

				for (emu_fiber *f : l->fibers) {
					emu.stacks.push_back(f->stack);
					delete f;
				}
				delete l;
				q.erase(q.begin());
			}
			if (q.empty())
				continue;
			if (q.front()->fibers.empty())
				emu_start(q.front());
			if (emu.stall_left && (int)r == emu.stall_rank) {
				held = true; /* this rank sits out the round */
				continue;
			}
			for (emu_fiber *f : q.front()->fibers)
				if (!f->done)
					ready.push_back(f);
		}
		if (emu.stall_left)
			emu.stall_left--;
		if (ready.empty() && !held)
			break;
		/* one round: every live fiber once, in a random order */
		for (size_t i = ready.size(); i > 1; i--) {
			size_t j = emu_rand() % i;
			emu_fiber *t = ready[i - 1];

			ready[i - 1] = ready[j];
			ready[j] = t;
		}
		for (emu_fiber *f : ready) {
			emu.cur = f;
			emu_to_fiber(f);
			if (f->done)
				f->launch->live--;
		}
		emu.clock_ns += 1000;
	}
	emu.cur = NULL;
	return emu.switches - sw0;
}

#endif
