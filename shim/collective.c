/* collective.c - barrier, broadcast, allgather and gather over PMIx put/commit/fence/get,
 * with a deadline that Slurm's own fence does not have. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim/dtshim.h"
#include "shim/shim.h"

/* One fence in flight. When the caller gives up at its deadline it leaves the wait behind
 * (abandoned) and the callback, if it ever comes, frees it. */
struct fence_wait {
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	bool done, abandoned;
	pmix_status_t status;
};

static void fence_wait_free(struct fence_wait *w)
{
	pthread_cond_destroy(&w->done_cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

static void fence_done(pmix_status_t status, void *cbdata)
{
	struct fence_wait *w = cbdata;
	bool abandoned;

	pthread_mutex_lock(&w->lock);
	w->status = status;
	w->done = true;
	abandoned = w->abandoned;
	pthread_cond_signal(&w->done_cond);
	pthread_mutex_unlock(&w->lock);
	if (abandoned)
		fence_wait_free(w);
}

static struct fence_wait *fence_wait_new(void)
{
	struct fence_wait *w = calloc(1, sizeof(*w));
	pthread_condattr_t attr;

	if (w == NULL)
		return NULL;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->done_cond, &attr);
	pthread_condattr_destroy(&attr);
	return w;
}

/* Wait for the fence's callback until the deadline; DTSHIM_ERR_TIMEOUT leaves w behind. */
static int fence_wait_for(struct fence_wait *w, pmix_status_t *status)
{
	struct timespec deadline;
	double whole;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	if (shim_world.timeout_s > 0) {
		double frac = modf(shim_world.timeout_s, &whole);
		deadline.tv_sec += (time_t)whole;
		deadline.tv_nsec += (long)(frac * 1e9);
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&w->lock);
	while (!w->done && rc != ETIMEDOUT) {
		if (shim_world.timeout_s > 0)
			rc = pthread_cond_timedwait(&w->done_cond, &w->lock, &deadline);
		else
			pthread_cond_wait(&w->done_cond, &w->lock);
	}
	if (!w->done) {
		w->abandoned = true;
		pthread_mutex_unlock(&w->lock);
		return DTSHIM_ERR_TIMEOUT;
	}
	*status = w->status;
	pthread_mutex_unlock(&w->lock);
	fence_wait_free(w);
	return DTSHIM_OK;
}

static int fence(bool collect, uint64_t seq)
{
	pmix_proc_t job;
	pmix_info_t info;
	bool yes = true;
	struct fence_wait *w;
	pmix_status_t rc, status = PMIX_SUCCESS;

	if ((w = fence_wait_new()) == NULL)
		return DTSHIM_ERR_NO_MEMORY;
	PMIX_LOAD_PROCID(&job, shim_world.self.nspace, PMIX_RANK_WILDCARD);
	/* Slurm collects data whenever PMIX_COLLECT_DATA is present, whatever its value. */
	if (collect)
		PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	rc = PMIx_Fence_nb(&job, 1, collect ? &info : NULL, collect ? 1 : 0, fence_done, w);
	if (collect)
		PMIX_INFO_DESTRUCT(&info);
	if (rc == PMIX_OPERATION_SUCCEEDED) {
		fence_wait_free(w);
		return DTSHIM_OK;
	}
	if (rc != PMIX_SUCCESS) {
		fence_wait_free(w);
		return shim_fail(DTSHIM_ERR_PMIX, "collective #%llu: PMIx_Fence_nb failed: %s",
		                 (unsigned long long)seq, PMIx_Error_string(rc));
	}
	if (fence_wait_for(w, &status) == DTSHIM_ERR_TIMEOUT) {
		shim_world.broken = true;
		shim_fail(DTSHIM_ERR_TIMEOUT,
		          "collective #%llu on rank %d: not every rank arrived within %g s",
		          (unsigned long long)seq, shim_world.rank, shim_world.timeout_s);
		if (shim_world.abort_on_timeout)
			PMIx_Abort(1, dtshim_last_error(), NULL, 0);
		return DTSHIM_ERR_TIMEOUT;
	}
	if (status != PMIX_SUCCESS)
		return shim_fail(DTSHIM_ERR_PMIX, "collective #%llu: fence failed: %s",
		                 (unsigned long long)seq, PMIx_Error_string(status));
	return DTSHIM_OK;
}

int shim_begin(uint64_t *seq)
{
	if (!shim_world.initialized)
		return DTSHIM_ERR_NOT_INITIALIZED;
	pthread_mutex_lock(&shim_world.lock);
	if (shim_world.broken) {
		pthread_mutex_unlock(&shim_world.lock);
		return DTSHIM_ERR_BROKEN;
	}
	*seq = shim_world.seq++;
	return DTSHIM_OK;
}

void shim_end(void)
{
	pthread_mutex_unlock(&shim_world.lock);
}

int shim_exchange(enum shim_op op, const void *payload, size_t size, bool contribute,
                  uint64_t seq)
{
	char key[PMIX_MAX_KEYLEN + 1];
	pmix_value_t value;
	uint8_t *frame;
	pmix_status_t rc;

	if (contribute) {
		if (shim_key(key, sizeof(key), seq) != DTSHIM_OK)
			return DTSHIM_ERR_INVALID;
		if ((frame = malloc(SHIM_FRAME_HEADER + size)) == NULL)
			return DTSHIM_ERR_NO_MEMORY;
		shim_frame_header(frame, op, size);
		if (size > 0)
			memcpy(frame + SHIM_FRAME_HEADER, payload, size);
		value.type = PMIX_BYTE_OBJECT;
		value.data.bo.bytes = (char *)frame;
		value.data.bo.size = SHIM_FRAME_HEADER + size;
		rc = PMIx_Put(PMIX_GLOBAL, key, &value);
		free(frame);
		if (rc != PMIX_SUCCESS)
			return shim_fail(DTSHIM_ERR_PMIX, "PMIx_Put(%s, %zu bytes) failed: %s", key,
			                 size, PMIx_Error_string(rc));
		rc = PMIx_Commit();
		if (rc != PMIX_SUCCESS)
			return shim_fail(DTSHIM_ERR_PMIX, "PMIx_Commit failed: %s",
			                 PMIx_Error_string(rc));
	}
	return fence(true, seq);
}

int shim_read(int rank, enum shim_op op, uint64_t seq, pmix_value_t **value,
              const uint8_t **payload, uint64_t *size)
{
	char key[PMIX_MAX_KEYLEN + 1];
	pmix_proc_t peer;
	pmix_value_t *v = NULL;
	pmix_status_t rc;
	int rv;

	if (shim_key(key, sizeof(key), seq) != DTSHIM_OK)
		return DTSHIM_ERR_INVALID;
	PMIX_LOAD_PROCID(&peer, shim_world.self.nspace, (pmix_rank_t)rank);
	rc = PMIx_Get(&peer, key, NULL, 0, &v);
	if (rc != PMIX_SUCCESS)
		return shim_fail(DTSHIM_ERR_PMIX, "PMIx_Get(%s of rank %d) failed: %s", key, rank,
		                 PMIx_Error_string(rc));
	if (v->type != PMIX_BYTE_OBJECT) {
		PMIX_VALUE_RELEASE(v);
		return shim_fail(DTSHIM_ERR_PMIX, "%s of rank %d is not a byte object", key, rank);
	}
	rv = shim_frame_parse((const uint8_t *)v->data.bo.bytes, v->data.bo.size, op, payload,
	                      size);
	if (rv != DTSHIM_OK) {
		PMIX_VALUE_RELEASE(v);
		return shim_fail(rv, "%s of rank %d: %s", key, rank, dtshim_strerror(rv));
	}
	*value = v;
	return DTSHIM_OK;
}

int dtshim_barrier(void)
{
	uint64_t seq;
	int rv;

	if ((rv = shim_begin(&seq)) != DTSHIM_OK)
		return rv;
	rv = shim_world.pmix ? fence(false, seq) : DTSHIM_OK;
	shim_end();
	return rv;
}

static int check_root(int root)
{
	if (root < 0 || root >= shim_world.size)
		return shim_fail(DTSHIM_ERR_INVALID, "root %d outside 0..%d", root,
		                 shim_world.size - 1);
	return DTSHIM_OK;
}

static int broadcast(enum shim_op op, void *buf, size_t size, int root)
{
	const uint8_t *payload;
	pmix_value_t *v = NULL;
	uint64_t seq, got;
	int rv;

	if (buf == NULL && size > 0)
		return DTSHIM_ERR_INVALID;
	if ((rv = shim_begin(&seq)) != DTSHIM_OK)
		return rv;
	if ((rv = check_root(root)) != DTSHIM_OK || !shim_world.pmix)
		goto out;
	rv = shim_exchange(op, buf, size, shim_world.rank == root, seq);
	if (rv != DTSHIM_OK || shim_world.rank == root)
		goto out;
	if ((rv = shim_read(root, op, seq, &v, &payload, &got)) != DTSHIM_OK)
		goto out;
	if (got != size)
		rv = shim_fail(DTSHIM_ERR_SIZE, "broadcast #%llu: root %d sent %llu bytes, rank %d "
		               "expects %zu", (unsigned long long)seq, root,
		               (unsigned long long)got, shim_world.rank, size);
	else if (size > 0)
		memcpy(buf, payload, size);
	PMIX_VALUE_RELEASE(v);
out:
	shim_end();
	return rv;
}

int dtshim_broadcast(void *buf, size_t size, int root)
{
	return broadcast(SHIM_OP_BROADCAST, buf, size, root);
}

int dtshim_broadcastv(const void *send, size_t size, void **recv, size_t *recv_size, int root)
{
	const uint8_t *payload = send;
	pmix_value_t *v = NULL;
	uint64_t seq, got = size;
	uint8_t *out;
	int rv;

	if (recv == NULL || recv_size == NULL)
		return DTSHIM_ERR_INVALID;
	*recv = NULL;
	if ((rv = shim_begin(&seq)) != DTSHIM_OK)
		return rv;
	if ((rv = check_root(root)) != DTSHIM_OK)
		goto out;
	if (shim_world.rank == root && send == NULL && size > 0) {
		rv = DTSHIM_ERR_INVALID; /* the others are left to time out, as with any bad root */
		goto out;
	}
	if (shim_world.pmix) {
		rv = shim_exchange(SHIM_OP_BROADCASTV, send, size, shim_world.rank == root, seq);
		if (rv == DTSHIM_OK && shim_world.rank != root)
			rv = shim_read(root, SHIM_OP_BROADCASTV, seq, &v, &payload, &got);
		if (rv != DTSHIM_OK)
			goto out;
	}
	if ((out = malloc(got > 0 ? got : 1)) == NULL) {
		rv = DTSHIM_ERR_NO_MEMORY;
	} else {
		if (got > 0)
			memcpy(out, payload, got);
		*recv = out;
		*recv_size = got;
	}
	if (v != NULL)
		PMIX_VALUE_RELEASE(v);
out:
	shim_end();
	return rv;
}

/* Fixed-size gather to every rank (root < 0) or to root. */
static int gather_fixed(enum shim_op op, const void *send, size_t size, void *recv, int root)
{
	const uint8_t *payload;
	pmix_value_t *v;
	uint64_t seq, got;
	int rv;

	if (send == NULL && size > 0)
		return DTSHIM_ERR_INVALID;
	if ((rv = shim_begin(&seq)) != DTSHIM_OK)
		return rv;
	if (root >= 0 && (rv = check_root(root)) != DTSHIM_OK)
		goto out;
	if ((root < 0 || root == shim_world.rank) && recv == NULL && size > 0) {
		rv = DTSHIM_ERR_INVALID;
		goto out;
	}
	if (!shim_world.pmix) {
		if (size > 0)
			memcpy(recv, send, size);
		goto out;
	}
	if ((rv = shim_exchange(op, send, size, true, seq)) != DTSHIM_OK)
		goto out;
	if (root >= 0 && root != shim_world.rank)
		goto out;
	for (int r = 0; r < shim_world.size && rv == DTSHIM_OK; r++) {
		if ((rv = shim_read(r, op, seq, &v, &payload, &got)) != DTSHIM_OK)
			break;
		if (got != size)
			rv = shim_fail(DTSHIM_ERR_SIZE, "collective #%llu: rank %d sent %llu bytes, "
			               "rank %d %zu", (unsigned long long)seq, r,
			               (unsigned long long)got, shim_world.rank, size);
		else if (size > 0)
			memcpy((uint8_t *)recv + (size_t)r * size, payload, size);
		PMIX_VALUE_RELEASE(v);
	}
out:
	shim_end();
	return rv;
}

int dtshim_allgather(const void *send, size_t size, void *recv)
{
	return gather_fixed(SHIM_OP_ALLGATHER, send, size, recv, -1);
}

int dtshim_gather(const void *send, size_t size, void *recv, int root)
{
	if (root < 0)
		return DTSHIM_ERR_INVALID;
	return gather_fixed(SHIM_OP_GATHER, send, size, recv, root);
}

/* Variable-size gather to every rank (root < 0) or to root. */
static int gather_var(enum shim_op op, const void *send, size_t size, void **recv,
                      size_t *sizes, int root)
{
	pmix_value_t **values = NULL;
	const uint8_t **payloads = NULL;
	uint64_t seq, got, total = 0;
	uint8_t *out = NULL;
	int n = 0, rv;

	if ((send == NULL && size > 0) || recv == NULL)
		return DTSHIM_ERR_INVALID;
	*recv = NULL;
	if ((rv = shim_begin(&seq)) != DTSHIM_OK)
		return rv;
	if (root >= 0 && (rv = check_root(root)) != DTSHIM_OK)
		goto out;
	if ((root < 0 || root == shim_world.rank) && sizes == NULL) {
		rv = DTSHIM_ERR_INVALID;
		goto out;
	}
	if (!shim_world.pmix) {
		if ((out = malloc(size > 0 ? size : 1)) == NULL) {
			rv = DTSHIM_ERR_NO_MEMORY;
			goto out;
		}
		if (size > 0)
			memcpy(out, send, size);
		sizes[0] = size;
		*recv = out;
		goto out;
	}
	if ((rv = shim_exchange(op, send, size, true, seq)) != DTSHIM_OK)
		goto out;
	if (root >= 0 && root != shim_world.rank)
		goto out;
	values = calloc((size_t)shim_world.size, sizeof(*values));
	payloads = calloc((size_t)shim_world.size, sizeof(*payloads));
	if (values == NULL || payloads == NULL) {
		rv = DTSHIM_ERR_NO_MEMORY;
		goto out;
	}
	for (n = 0; n < shim_world.size; n++) {
		if ((rv = shim_read(n, op, seq, &values[n], &payloads[n], &got)) != DTSHIM_OK)
			goto out;
		sizes[n] = (size_t)got;
		total += got;
	}
	if ((out = malloc(total > 0 ? total : 1)) == NULL) {
		rv = DTSHIM_ERR_NO_MEMORY;
		goto out;
	}
	total = 0;
	for (int r = 0; r < shim_world.size; r++) {
		if (sizes[r] > 0)
			memcpy(out + total, payloads[r], sizes[r]);
		total += sizes[r];
	}
	*recv = out;
out:
	for (int r = 0; r < n; r++)
		PMIX_VALUE_RELEASE(values[r]);
	free(values);
	free(payloads);
	shim_end();
	return rv;
}

int dtshim_allgatherv(const void *send, size_t size, void **recv, size_t *sizes)
{
	return gather_var(SHIM_OP_ALLGATHERV, send, size, recv, sizes, -1);
}

int dtshim_gatherv(const void *send, size_t size, void **recv, size_t *sizes, int root)
{
	if (root < 0)
		return DTSHIM_ERR_INVALID;
	return gather_var(SHIM_OP_GATHERV, send, size, recv, sizes, root);
}

void dtshim_free(void *p)
{
	free(p);
}

int dtshim_share_unique_id(void *id, size_t len, int ok)
{
	static const uint8_t zero[256];
	const uint8_t *bytes = id;
	size_t i;
	int rv;

	if (id == NULL || len == 0)
		return DTSHIM_ERR_INVALID;
	if (dtshim_rank() == 0 && !ok)
		memset(id, 0, len);
	if ((rv = broadcast(SHIM_OP_UNIQUE_ID, id, len, 0)) != DTSHIM_OK)
		return rv;
	for (i = 0; i < len && bytes[i] == zero[i % sizeof(zero)]; i++)
		;
	if (i == len)
		return shim_fail(DTSHIM_ERR_NO_ID, "rank 0 published the all-zero id");
	return DTSHIM_OK;
}
