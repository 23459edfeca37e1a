// The Lua scripts of `RedisSessionStore`. Each runs atomically in Redis, so two gateway instances never see
// half a write. ARGV[1] is always the key prefix (`postern:`); keys are built from it inside the script:
//   <p>s:<id>        hash: td rd u e ro da dax dr z c l x ip ua (the session; `z` = 1 when da/dr are sealed; `ip` and
//                    `ua`, the client's IP and user agent at sign-in, are absent in sessions stored before them)
//   <p>t:<digest>    session id, by access-token digest
//   <p>r:<digest>    session id, by refresh-token digest
//   <p>used:<digest> session id of a rotated-away refresh digest (tombstone until the session's absolute expiry)
//   <p>ud:<id>       set: the tombstones of a session (forgotten with it on delete and purge)
//   <p>u:<user>      sorted set: session ids of a user by last use (for the per-user cap)
//   <p>all           sorted set: session ids by effective expiry (count and purge)
//   <p>ids           sorted set, every score 0: session ids in byte order (an operator's lookup by id prefix)
//   <p>e:<email>     set: the user ids whose sessions carry this e-mail (ASCII lower case; an operator's listing)
// `ids` and `e:` are filled on insert and update, and for sessions stored before them by the batched touch.
// Dates are milliseconds since 1970. The session, its two index keys and its entry in `all` share one expiry:
// min(last use + idle TTL, absolute expiry), set with PEXPIREAT.
import PosternRedis


extension RedisSessionStore {
    /// Lua that insert, update and rotate share: `index` files session `id` under its token digests (`t:`, `r:`),
    /// its user (`u:`, scored by last use `l`) and `all` (scored by `exp`), and gives the session hash and both
    /// digest keys the expiry `exp`.
    private static let indexWrites = """
    local function index(p, id, td, rd, u, l, exp)
      redis.call('PEXPIREAT', p..'s:'..id, exp)
      redis.call('SET', p..'t:'..td, id) redis.call('PEXPIREAT', p..'t:'..td, exp)
      redis.call('SET', p..'r:'..rd, id) redis.call('PEXPIREAT', p..'r:'..rd, exp)
      redis.call('ZADD', p..'u:'..u, l, id)
      redis.call('ZADD', p..'all', exp, id)
    end

    """

    /// `indexWrites`, and `store`, which writes a whole session from insert's and update's ARGV: the hash, `index`,
    /// and the `ids` and `e:` entries; the `u:` and `e:` sets expire after the session lifetime.
    private static let sessionWrites = indexWrites + """
    local function store(p, id)
      redis.call('HSET', p..'s:'..id, 'td', ARGV[3], 'rd', ARGV[4], 'u', ARGV[5], 'e', ARGV[6], 'ro', ARGV[7],
        'da', ARGV[8], 'dax', ARGV[9], 'dr', ARGV[10], 'z', ARGV[11], 'c', ARGV[12], 'l', ARGV[13], 'x', ARGV[14],
        'ip', ARGV[17], 'ua', ARGV[18])
      index(p, id, ARGV[3], ARGV[4], ARGV[5], ARGV[13], ARGV[15])
      redis.call('PEXPIRE', p..'u:'..ARGV[5], ARGV[16])
      redis.call('ZADD', p..'ids', 0, id)
      local ek = p..'e:'..string.lower(ARGV[6])
      redis.call('SADD', ek, ARGV[5])
      redis.call('PEXPIRE', ek, ARGV[16])
    end

    """

    /// Stores a new session; `DUPLICATE` error when its id or a digest is taken.
    /// ARGV: p id td rd u e ro da dax dr z c l x expiry maxTTLms ip ua.
    static let insertScript = RedisScript(sessionWrites + """
    local p, id = ARGV[1], ARGV[2]
    if redis.call('EXISTS', p..'s:'..id) + redis.call('EXISTS', p..'t:'..ARGV[3]) + redis.call('EXISTS', p..'r:'..ARGV[4]) > 0 then
      return redis.error_reply('DUPLICATE session')
    end
    store(p, id)
    return 1
    """)

    /// The session an index key points to: {id, HGETALL} or nil. ARGV: p kind(t|r) digest.
    static let lookupScript = RedisScript("""
    local id = redis.call('GET', ARGV[1]..ARGV[2]..':'..ARGV[3])
    if not id then return false end
    local h = redis.call('HGETALL', ARGV[1]..'s:'..id)
    if #h == 0 then return false end
    return {id, h}
    """)

    /// Compare-and-set rotation: new digests when the refresh digest is still ARGV[3]; the old one becomes a
    /// tombstone. Returns HGETALL afterwards, or nil. ARGV: p id oldRd newTd newRd lastUsed idleMs.
    static let rotateScript = RedisScript(indexWrites + """
    local p, id = ARGV[1], ARGV[2]
    local sk = p..'s:'..id
    local cur = redis.call('HMGET', sk, 'td', 'rd', 'x', 'u', 'l')
    if not cur[2] or cur[2] ~= ARGV[3] then return false end
    local x = tonumber(cur[3])
    local l = math.max(tonumber(ARGV[6]), tonumber(cur[5]))
    local exp = math.min(l + tonumber(ARGV[7]), x)
    redis.call('DEL', p..'t:'..cur[1], p..'r:'..cur[2])
    local used = p..'used:'..cur[2]
    redis.call('SET', used, id) redis.call('PEXPIREAT', used, x)
    redis.call('SADD', p..'ud:'..id, cur[2]) redis.call('PEXPIREAT', p..'ud:'..id, x)
    redis.call('HSET', sk, 'td', ARGV[4], 'rd', ARGV[5], 'l', l)
    index(p, id, ARGV[4], ARGV[5], cur[4], l, exp)
    return redis.call('HGETALL', sk)
    """)

    /// Replaces a whole session (same fields as insert); changed digests drop their old index keys, and a
    /// changed refresh digest leaves a tombstone. Returns 0 when the session is gone.
    /// ARGV: p id td rd u e ro da dax dr z c l x expiry maxTTLms ip ua.
    static let updateScript = RedisScript(sessionWrites + """
    local p, id = ARGV[1], ARGV[2]
    local sk = p..'s:'..id
    local old = redis.call('HMGET', sk, 'td', 'rd', 'x')
    if not old[1] then return 0 end
    if old[1] ~= ARGV[3] then redis.call('DEL', p..'t:'..old[1]) end
    if old[2] ~= ARGV[4] then
      redis.call('DEL', p..'r:'..old[2])
      local used = p..'used:'..old[2]
      redis.call('SET', used, id) redis.call('PEXPIREAT', used, ARGV[14])
      redis.call('SADD', p..'ud:'..id, old[2]) redis.call('PEXPIREAT', p..'ud:'..id, ARGV[14])
    end
    store(p, id)
    return 1
    """)

    /// Sets the Directus tokens (and the role when ARGV[7] is not empty); HGETALL afterwards, or nil when
    /// the session is gone. ARGV: p id da dax dr z role.
    static let directusTokensScript = RedisScript("""
    local sk = ARGV[1]..'s:'..ARGV[2]
    if redis.call('EXISTS', sk) == 0 then return false end
    redis.call('HSET', sk, 'da', ARGV[3], 'dax', ARGV[4], 'dr', ARGV[5], 'z', ARGV[6])
    if ARGV[7] ~= '' then redis.call('HSET', sk, 'ro', ARGV[7]) end
    return redis.call('HGETALL', sk)
    """)

    /// Moves last use forward (never back) and slides the idle expiry of each session given; files a session
    /// stored before `ids` and `e:` existed in them (a no-op for the others).
    /// ARGV: p idleMs (id lastUsed)...
    static let touchScript = RedisScript("""
    local p, idle = ARGV[1], tonumber(ARGV[2])
    for i = 3, #ARGV, 2 do
      local id, l = ARGV[i], tonumber(ARGV[i + 1])
      local sk = p..'s:'..id
      local cur = redis.call('HMGET', sk, 'td', 'rd', 'x', 'u', 'l', 'e')
      if cur[1] and cur[6] then
        redis.call('ZADD', p..'ids', 0, id)
        local ek = p..'e:'..string.lower(cur[6])
        if redis.call('SADD', ek, cur[4]) == 1 and redis.call('PTTL', ek) == -1 then
          redis.call('PEXPIREAT', ek, cur[3])
        end
      end
      if cur[1] and tonumber(cur[5]) < l then
        local exp = math.min(l + idle, tonumber(cur[3]))
        redis.call('HSET', sk, 'l', l)
        redis.call('PEXPIREAT', sk, exp)
        redis.call('PEXPIREAT', p..'t:'..cur[1], exp)
        redis.call('PEXPIREAT', p..'r:'..cur[2], exp)
        redis.call('ZADD', p..'u:'..cur[4], l, id)
        redis.call('ZADD', p..'all', exp, id)
      end
    end
    return 1
    """)

    /// Deletes a session with its index keys and tombstones. ARGV: p id.
    static let deleteScript = RedisScript("""
    local p, id = ARGV[1], ARGV[2]
    local sk = p..'s:'..id
    for _, d in ipairs(redis.call('SMEMBERS', p..'ud:'..id)) do redis.call('DEL', p..'used:'..d) end
    redis.call('DEL', p..'ud:'..id)
    local cur = redis.call('HMGET', sk, 'td', 'rd', 'u')
    redis.call('ZREM', p..'all', id)
    redis.call('ZREM', p..'ids', id)
    if not cur[1] then return 0 end
    redis.call('DEL', sk, p..'t:'..cur[1], p..'r:'..cur[2])
    redis.call('ZREM', p..'u:'..cur[3], id)
    return 1
    """)

    /// {id, created, lastUsed}... of a user's live sessions; drops ids whose session expired. ARGV: p user.
    static let recencyScript = RedisScript("""
    local p = ARGV[1]
    local uk = p..'u:'..ARGV[2]
    local ids = redis.call('ZRANGE', uk, 0, -1, 'WITHSCORES')
    local out = {}
    for i = 1, #ids, 2 do
      local c = redis.call('HGET', p..'s:'..ids[i], 'c')
      if c then
        out[#out + 1] = ids[i] out[#out + 1] = c out[#out + 1] = ids[i + 1]
      else
        redis.call('ZREM', uk, ids[i])
      end
    end
    return out
    """)

    /// Forgets the ids (and tombstones) of sessions whose expiry passed (Redis already expired their keys);
    /// returns them.
    /// ARGV: p now.
    static let purgeScript = RedisScript("""
    local k = ARGV[1]..'all'
    local ids = redis.call('ZRANGEBYSCORE', k, '-inf', ARGV[2], 'LIMIT', 0, 10000)
    for _, id in ipairs(ids) do
      redis.call('ZREM', k, id)
      redis.call('ZREM', ARGV[1]..'ids', id)
      for _, d in ipairs(redis.call('SMEMBERS', ARGV[1]..'ud:'..id)) do redis.call('DEL', ARGV[1]..'used:'..d) end
      redis.call('DEL', ARGV[1]..'ud:'..id)
    end
    return ids
    """)

    /// {id, u, e, c, l, x, ip, ua}... of the live sessions of one user (ARGV[2] = 'u', ARGV[3] the user id) or
    /// of every user filed under one e-mail (ARGV[2] = 'e', ARGV[3] the e-mail in ASCII lower case; sessions
    /// carrying another e-mail are left out). Forgets index entries whose session is gone. ARGV: p mode key.
    static let summariesScript = RedisScript("""
    local p, mode, key = ARGV[1], ARGV[2], ARGV[3]
    local out = {}
    local function user(u)
      local uk = p..'u:'..u
      local found = 0
      for _, id in ipairs(redis.call('ZRANGE', uk, 0, -1)) do
        local h = redis.call('HMGET', p..'s:'..id, 'u', 'e', 'c', 'l', 'x', 'ip', 'ua')
        if not h[3] then
          redis.call('ZREM', uk, id)
        elseif mode == 'u' or string.lower(h[2] or '') == key then
          found = found + 1
          out[#out + 1] = id
          for j = 1, 7 do out[#out + 1] = h[j] or '' end
        end
      end
      return found
    end
    if mode == 'u' then
      user(key)
    else
      local ek = p..'e:'..key
      for _, u in ipairs(redis.call('SMEMBERS', ek)) do
        if user(u) == 0 then redis.call('SREM', ek, u) end
      end
    end
    return out
    """)

    /// Up to ARGV[3] ids of live sessions starting with ARGV[2] (the `ids` index in byte order; DEL, 0x7F, is
    /// above every base64url character); forgets entries whose session is gone. ARGV: p prefix limit.
    static let prefixScript = RedisScript("""
    local p, prefix, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
    local k = p..'ids'
    local out = {}
    local offset = 0
    while #out < limit do
      local ids = redis.call('ZRANGEBYLEX', k, '['..prefix, '('..prefix..'\\127', 'LIMIT', offset, 32)
      if #ids == 0 then break end
      for _, id in ipairs(ids) do
        if redis.call('EXISTS', p..'s:'..id) == 1 then
          if #out < limit then out[#out + 1] = id end
        else
          redis.call('ZREM', k, id)
          offset = offset - 1
        end
      end
      offset = offset + #ids
    end
    return out
    """)

    /// Releases a lock only if it still holds our token. KEYS[1] lock; ARGV[1] token.
    static let unlockScript = RedisScript("""
    if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
    return 0
    """)
}
