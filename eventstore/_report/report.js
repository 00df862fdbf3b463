(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var STATUS = ["resident", "summarised", "truncated", "spilled", "withdrawn"];
  var WITHDRAWN = 4;
  var WITHDRAWAL = { retraction: "TurnRetracted", clear: "ContextCleared" };
  var LEFT = 132,
    RIGHT = 34,
    ROW = 24,
    GAP = 10;
  // characters of a label (events list, version caption, details title), of a value in the
  // details (a summary, cut at 4,000 by the model, is whole), of an id or key in a label
  var LABEL = 300,
    DETAIL = 5000,
    KEY = 200;

  function undelta(a) {
    var x = 0,
      out = new Array(a.length);
    for (var i = 0; i < a.length; i++) {
      x += a[i];
      out[i] = x;
    }
    return out;
  }
  function upper(a, v) {
    var lo = 0,
      hi = a.length;
    while (lo < hi) {
      var m = (lo + hi) >> 1;
      if (a[m] <= v) lo = m + 1;
      else hi = m;
    }
    return lo;
  }
  function lower(a, v) {
    var lo = 0,
      hi = a.length;
    while (lo < hi) {
      var m = (lo + hi) >> 1;
      if (a[m] < v) lo = m + 1;
      else hi = m;
    }
    return lo;
  }
  function fmt(n) {
    return Number(n).toLocaleString("en-US");
  }
  function svg(tag, attrs, parent, text) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs)
      if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = visible(text);
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(tag, cls, text, parent) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== null && text !== undefined) e.textContent = visible(text);
    if (parent) parent.appendChild(e);
    return e;
  }
  // Bidi controls (an RLO would reverse the page's own words after it) and the other
  // invisible control characters, shown as escapes ("U+202E" between single guillemets):
  // every text the page writes passes here (the set is CONTROL_CLASS).
  var CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function visible(text) {
    return String(text).replace(CONTROLS, function (c) {
      var hex = c.charCodeAt(0).toString(16).toUpperCase();
      return "\u2039U+" + ("000" + hex).slice(-4) + "\u203a";
    });
  }
  // Text whole up to n characters, else cut as eventstore._timeline_build.cut cuts it
  // (counting what the model had already cut off).
  var CUT = /\u2026 \(([0-9,]+) more chars\)$/;
  function clip(text, n) {
    text = String(text);
    if (text.length <= n) return text;
    var before = CUT.exec(text),
      more = before ? Number(before[1].replace(/,/g, "")) : 0;
    if (before) text = text.slice(0, before.index);
    if (text.length <= n) return text + before[0];
    return text.slice(0, n) + "\u2026 (" + fmt(text.length - n + more) + " more chars)";
  }
  // An id or a key in a label or a title.
  function short(text) {
    return clip(text, KEY);
  }
  function fit(text, px) {
    text = visible(text);
    var n = Math.floor(px / 6.4);
    if (n < 2) return "";
    return text.length <= n ? text : text.slice(0, n - 1) + "\u2026";
  }
  function fitFirst(options, px) {
    for (var i = 0; i < options.length; i++) {
      var text = visible(options[i]);
      if (fit(text, px) === text) return text;
    }
    return fit(options[options.length - 1], px);
  }
  function missingOf(node) {
    var out = Object.keys(node.required_dispositions)
      .filter(function (k) {
        return node.dispositions[k] !== node.required_dispositions[k];
      })
      .map(function (k) {
        return k + "=" + node.required_dispositions[k];
      });
    node.required_calls.forEach(function (c) {
      if (node.calls.indexOf(c) < 0) out.push("call " + c);
    });
    node.required_constraints.forEach(function (c) {
      if (node.constraints.indexOf(c) < 0) out.push("constraint " + c);
    });
    return out;
  }
  function span(lo, hi) {
    return "[" + fmt(lo) + ", " + fmt(hi) + ")";
  }
  function rules(vs) {
    return vs
      .map(function (x) {
        return x.rule;
      })
      .join(" ");
  }

  function Session(section, data) {
    var d = (this.d = data),
      self = this;
    this.section = section;
    this.tok = undelta(d.tok);
    this.tv = undelta(d.tv);
    this.total = this.tv.length;
    this.endAll = this.pos(this.total);
    this.types = d.kinds.split("").map(function (c) {
      return d.types[c.charCodeAt(0) - 48];
    });
    this.tcut = new Int32Array(this.total);
    this.tspill = new Int32Array(this.total);
    this.twd = new Int32Array(this.total);
    d.runs.forEach(function (r) {
      for (var i = r[0]; i < r[1]; i++) {
        self.tcut[i] = r[2] || 0;
        self.tspill[i] = r[3] || 0;
        self.twd[i] = r[4] || 0;
      }
    });
    this.withdrawalAt = {};
    d.withdrawals.forEach(function (w) {
      self.withdrawalAt[w.version] = w;
    });
    d.routine.forEach(function (b) {
      b.raisedV = undelta(b.raised);
      b.endedV = undelta(b.ended);
    });
    this.labels = this.eventLabels();
    this.rows = this.layout();
    this.selected = null;
    this.build();
  }

  Session.prototype.pos = function (i) {
    return this.d.unit === "turns" ? i : this.tok[i];
  };
  Session.prototype.index = function (p) {
    return this.d.unit === "turns" ? p : lower(this.tok, p);
  };
  Session.prototype.unitName = function () {
    return this.d.unit === "turns" ? "turn" : "token";
  };

  Session.prototype.eventLabels = function () {
    var d = this.d,
      L = {};
    function put(v, text, cls) {
      L[v] = { text: text, cls: cls };
    }
    d.nodes.forEach(function (n) {
      var what = "Compacted " + short(n.node_id) + " L" + n.tier + " " + span(n.lo, n.hi);
      put(n.version, what, "ok");
    });
    d.refusals.forEach(function (r) {
      put(
        r.version,
        "CompactionRefused " + short(r.node_id) + " L" + r.tier + ": " + rules(r.violations),
        "bad",
      );
    });
    d.markers.forEach(function (m) {
      if (m.refused)
        put(
          m.version,
          "MarkerRefused " +
            short(m.marker_id) +
            " on " +
            short(m.node_id) +
            ": " +
            rules(m.violations),
          "bad",
        );
      else put(m.version, "MarkerEmitted " + short(m.marker_id) + " on " + short(m.node_id), "ok");
      if (m.invalidated_at)
        put(m.invalidated_at, "MarkerInvalidated " + short(m.marker_id) + ": " + m.rule, "bad");
    });
    d.ranges.forEach(function (r) {
      put(
        r.version,
        (r.kind === "truncation" ? "Truncated " : "Spilled ") + span(r.lo, r.hi),
        r.kind === "truncation" ? "warn" : "info",
      );
    });
    d.withdrawals.forEach(function (w) {
      var what =
        w.kind === "retraction"
          ? "TurnRetracted #" + w.first
          : "ContextCleared turns before #" +
            w.stop +
            (w.nodes.length ? ", " + short(w.nodes.join(", ")) + " out" : "");
      put(w.version, what + (w.reason ? " (" + short(w.reason) + ")" : ""), "warn");
    });
    d.points.forEach(function (p) {
      if (p.kind === "checkpoint") put(p.version, "Checkpointed at " + fmt(p.position), "info");
      else
        put(
          p.version,
          "Resumed " +
            short(p.marker_id) +
            " \u2192 " +
            (p.kind === "resume_digest" ? "digest" : "raw checkpoint at " + fmt(p.position)),
          p.kind === "resume_digest" ? "ok" : "warn",
        );
    });
    var names = {
      open_call: ["CallOpened ", "CallResolved "],
      constraint: ["ConstraintStated ", "ConstraintLifted "],
      negative_fact: ["ItemDisposed ", "ItemDisposed "],
    };
    d.obligations.forEach(function (o) {
      put(o.version, names[o.kind][0] + short(o.key), "info");
      if (o.ended_at && !L[o.ended_at]) put(o.ended_at, names[o.kind][1] + short(o.key), "info");
    });
    d.routine.forEach(function (b) {
      b.keys.forEach(function (key, k) {
        put(b.raisedV[k], names[b.kind][0] + short(key), "info");
        if (!L[b.endedV[k]]) put(b.endedV[k], names[b.kind][1] + short(key), "info");
      });
    });
    return L;
  };

  Session.prototype.label = function (v) {
    if (v === 0) return "before the first event";
    var known = this.labels[v];
    if (known) return clip(known.text, LABEL);
    var type = this.types[v - 1];
    if (type === "TurnAppended") {
      var i = lower(this.tv, v);
      var info = this.d.info[i];
      return "TurnAppended #" + i + (info ? " " + info[0] : "");
    }
    return type;
  };

  Session.prototype.layout = function () {
    var d = this.d,
      rows = { tier: {}, refused: {}, obligations: 0 };
    [1, 2].forEach(function (t) {
      rows.tier[t] =
        1 +
        Math.max(
          -1,
          Math.max.apply(
            null,
            d.nodes
              .filter(function (n) {
                return n.tier === t;
              })
              .map(function (n) {
                return n.row;
              })
              .concat([-1]),
          ),
        );
      rows.refused[t] =
        1 +
        Math.max.apply(
          null,
          d.refusals
            .filter(function (r) {
              return r.tier === t;
            })
            .map(function (r) {
              return r.row;
            })
            .concat([-1]),
        );
    });
    rows.obligations =
      1 +
      Math.max.apply(
        null,
        d.obligations
          .map(function (o) {
            return o.row;
          })
          .concat([-1]),
      );
    function stack(items) {
      var at = {},
        most = 0;
      items.forEach(function (p) {
        at[p.position] = (at[p.position] || 0) + 1;
        most = Math.max(most, at[p.position]);
      });
      return most;
    }
    rows.markers = Math.max(1, stack(d.markers));
    rows.truncations = d.ranges.some(function (r) {
      return r.kind === "truncation";
    })
      ? 1
      : 0;
    rows.spills = d.ranges.some(function (r) {
      return r.kind === "spill";
    })
      ? 1
      : 0;
    rows.withdrawals = d.withdrawals.length ? 1 : 0;
    rows.resumes = stack(
      d.points.filter(function (p) {
        return p.kind !== "checkpoint";
      }),
    );
    return rows;
  };

  // -- the state at v: the same answers as reducers.fold (see eventstore/_timeline.py view_at)
  Session.prototype.nodeAt = function (n, v) {
    if (n.replaced_at !== null && n.replaced_at <= v) return "replaced";
    return n.cleared_at !== null && n.cleared_at <= v ? "cleared" : "live";
  };
  Session.prototype.liveAt = function (n, v) {
    return n.version <= v && this.nodeAt(n, v) === "live";
  };

  Session.prototype.stateAt = function (v) {
    var self = this,
      d = this.d,
      n = upper(this.tv, v);
    var status = new Uint8Array(n),
      since = new Int32Array(n);
    var live = d.nodes.filter(function (x) {
      return self.liveAt(x, v);
    });
    var liveIds = {};
    live.forEach(function (x) {
      liveIds[x.node_id] = true;
      for (var i = self.index(x.lo), hi = Math.min(self.index(x.hi), n); i < hi; i++) {
        status[i] = 1;
        since[i] = x.version;
      }
    });
    // truncated (or spilled) first, then withdrawn, then summarised, else resident
    for (var i = 0; i < n; i++) {
      var c = this.tcut[i],
        w = this.twd[i];
      if (c && c <= v) {
        var s = this.tspill[i];
        if (s && s <= v) {
          status[i] = 3;
          since[i] = Math.max(c, s);
        } else {
          status[i] = 2;
          since[i] = c;
        }
      } else if (w && w <= v) {
        status[i] = WITHDRAWN;
        since[i] = w;
      } else if (!status[i]) since[i] = this.tv[i];
    }
    var tokens = this.tok[n] - this.tok[0],
      kept = 0;
    for (i = 0; i < n; i++) if (status[i] === 0) kept += this.tok[i + 1] - this.tok[i];
    var obligations = {},
      counts = { open: 0, carried: 0, dropped: 0, ended: 0 };
    d.obligations.forEach(function (o) {
      if (o.version > v) return;
      var st = self.obligationAt(o, v, liveIds);
      obligations[o.kind + "\u0000" + o.key + "\u0000" + o.version] = st;
      counts[st] += 1;
    });
    var routineOpen = 0;
    d.routine.forEach(function (b) {
      for (var k = 0; k < b.raisedV.length; k++)
        if (b.raisedV[k] <= v && v < b.endedV[k]) routineOpen++;
    });
    var markers = { valid: 0, refused: 0, invalidated: 0 };
    d.markers.forEach(function (m) {
      if (m.version <= v) markers[self.markerAt(m, v)] += 1;
    });
    var cleared = d.nodes.filter(function (x) {
      return x.version <= v && self.nodeAt(x, v) === "cleared";
    }).length;
    return {
      v: v,
      turns: n,
      status: status,
      since: since,
      end: this.pos(n),
      tokens: tokens,
      occupancy:
        kept +
        live.reduce(function (a, x) {
          return a + x.tokens;
        }, 0),
      depth: live.reduce(function (a, x) {
        return Math.max(a, x.tier);
      }, 0),
      tail: live.reduce(function (a, x) {
        return Math.max(a, x.hi);
      }, 0),
      live: liveIds,
      liveCount: live.length,
      cleared: cleared,
      counts: counts,
      markers: markers,
      routineOpen: routineOpen,
      refusals: d.refusals.filter(function (r) {
        return r.version <= v;
      }).length,
    };
  };

  Session.prototype.obligationAt = function (o, v, live) {
    if (o.ended_at !== null && o.ended_at <= v) return "ended";
    if (
      o.carried_by.some(function (id) {
        return live[id];
      })
    )
      return "carried";
    var out =
      (o.fell_out_at !== null && o.fell_out_at <= v) ||
      (o.withdrawn_at !== null && o.withdrawn_at <= v) ||
      o.covered_by.some(function (id) {
        return live[id];
      });
    return out ? "dropped" : "open";
  };

  Session.prototype.markerAt = function (m, v) {
    if (m.refused) return "refused";
    return m.invalidated_at !== null && m.invalidated_at <= v ? "invalidated" : "valid";
  };

  // -- page structure
  Session.prototype.build = function () {
    var self = this,
      d = this.d,
      s = this.section;
    var bar = html("div", "toolbar", null, s.querySelector(".controls"));
    this.slider = html("input", "slider", null, bar);
    this.slider.type = "range";
    this.slider.min = "0";
    this.slider.max = String(d.version);
    this.slider.value = String(d.at);
    this.slider.setAttribute("aria-label", "version");
    var buttons = [
      [
        "\u25c0\u25c0",
        "first version",
        function () {
          return 0;
        },
      ],
      [
        "\u25c0 event",
        "previous event",
        function (v) {
          return Math.max(0, v - 1);
        },
      ],
      [
        "event \u25b6",
        "next event",
        function (v) {
          return Math.min(d.version, v + 1);
        },
      ],
      [
        "\u25c0 decision",
        "previous listed event",
        function (v) {
          return self.step(v, -1);
        },
      ],
      [
        "decision \u25b6",
        "next listed event",
        function (v) {
          return self.step(v, 1);
        },
      ],
      [
        "\u25b6\u25b6",
        "latest version",
        function () {
          return d.version;
        },
      ],
    ];
    buttons.forEach(function (b) {
      var btn = html("button", "step", b[0], bar);
      btn.title = b[1];
      btn.addEventListener("click", function () {
        self.show(b[2](self.v));
      });
    });
    this.slider.addEventListener("input", function () {
      self.show(Number(self.slider.value));
    });
    this.vlabel = html("div", "vlabel", null, s.querySelector(".controls"));
    this.summary = html("div", "summary", null, s.querySelector(".controls"));
    this.svgbox = s.querySelector(".timeline");
    this.tip = html("div", "tip", null, document.body);
    this.details = s.querySelector(".details");
    this.list = s.querySelector(".events");
    this.buildList();
    this.show(d.at);
  };

  Session.prototype.buildList = function () {
    var self = this,
      d = this.d;
    var skip = { TurnAppended: true, SessionStarted: false };
    if (!d.list_calls) {
      skip.CallOpened = true;
      skip.CallResolved = true;
    }
    this.listed = [];
    this.chips = {};
    var shown = 0;
    for (var v = 1; v <= d.version; v++) {
      if (skip[this.types[v - 1]]) continue;
      this.listed.push(v);
      if (shown >= 2000) continue;
      shown++;
      var info = this.labels[v] || { text: this.types[v - 1], cls: "info" };
      var unverified = d.chain && v >= d.chain.version ? " unverified" : "";
      var chip = html("button", "chip " + info.cls + unverified, null, this.list);
      html("b", null, "v" + v, chip);
      chip.appendChild(document.createTextNode(visible(" " + this.label(v))));
      chip.setAttribute("data-version", String(v));
      chip.addEventListener(
        "click",
        (function (x) {
          return function () {
            self.show(x);
          };
        })(v),
      );
      this.chips[v] = chip;
    }
    if (this.listed.length > shown)
      html("div", "more", this.listed.length - shown + " more events: use the slider", this.list);
  };

  Session.prototype.step = function (v, dir) {
    var i = dir > 0 ? upper(this.listed, v) : lower(this.listed, v) - 1;
    if (i < 0) return 0;
    return i >= this.listed.length ? this.d.version : this.listed[i];
  };

  Session.prototype.show = function (v) {
    v = Math.max(0, Math.min(this.d.version, v | 0));
    this.v = v;
    this.slider.value = String(v);
    var st = (this.st = this.stateAt(v));
    this.vlabel.textContent = "";
    html("b", null, "version " + v + " of " + this.d.version, this.vlabel);
    this.vlabel.appendChild(document.createTextNode(visible(" \u2014 " + this.label(v))));
    var chain = this.d.chain;
    if (chain && v >= chain.version) {
      var warning = " \u26a0 not verified: the hash chain breaks at v" + chain.version;
      html("span", "unverified", warning, this.vlabel);
    }
    this.drawSummary(st);
    this.draw(st);
    var old = this.list.querySelector(".chip.current");
    if (old) old.classList.remove("current");
    var chip = this.chips[v];
    if (chip) {
      chip.classList.add("current");
      this.reveal(chip);
    }
    if (this.selected) this.select(this.selected.kind, this.selected.obj, false);
  };

  // Scroll the events list's own box to the chip; never the window (scrollIntoView would
  // scroll it too and take the focused slider out of view).
  Session.prototype.reveal = function (chip) {
    var box = this.list,
      top = chip.offsetTop,
      bottom = top + chip.offsetHeight;
    if (top < box.scrollTop) box.scrollTop = top;
    else if (bottom > box.scrollTop + box.clientHeight) box.scrollTop = bottom - box.clientHeight;
  };

  Session.prototype.drawSummary = function (st) {
    var cfg = this.d.config,
      s = this.summary,
      c = st.counts,
      n = [0, 0, 0, 0, 0];
    for (var i = 0; i < st.turns; i++) n[st.status[i]]++;
    s.textContent = "";
    var attrs = {
      turns: st.turns,
      occupancy: st.occupancy,
      depth: st.depth,
      tail: st.tail,
      live: st.liveCount,
      withdrawn: n[WITHDRAWN],
      cleared: st.cleared,
      open: c.open,
      carried: c.carried,
      dropped: c.dropped,
      refusals: st.refusals,
      "markers-valid": st.markers.valid,
      "markers-refused": st.markers.refused,
      "markers-invalidated": st.markers.invalidated,
    };
    for (var k in attrs) s.setAttribute("data-" + k, String(attrs[k]));
    function item(label, value, cls) {
      var e = html("span", "fact " + (cls || ""), null, s);
      html("i", null, label, e);
      html("b", null, value, e);
    }
    item("turns", fmt(st.turns) + " (" + fmt(st.tokens) + " tokens)");
    item("resident / summarised / truncated / spilled / withdrawn", n.join(" / "));
    item(
      "occupancy",
      fmt(st.occupancy) +
        (cfg
          ? " of " + fmt(cfg.window_tokens) + " tokens (trigger " + fmt(cfg.trigger_tokens) + ")"
          : " tokens"),
      cfg && st.occupancy > cfg.trigger_tokens ? "warn" : "",
    );
    item("depth", "L" + st.depth + ", tail starts at " + fmt(st.tail));
    item(
      "live summaries",
      String(st.liveCount) + (st.cleared ? " (" + st.cleared + " cleared)" : ""),
    );
    item(
      "markers valid / refused / invalidated",
      st.markers.valid + " / " + st.markers.refused + " / " + st.markers.invalidated,
      st.markers.refused + st.markers.invalidated ? "bad" : "",
    );
    item(
      "obligations open / carried / dropped",
      c.open + " / " + c.carried + " / " + c.dropped,
      c.dropped ? "bad" : "",
    );
    if (this.d.routine.length) item("routine obligations open", String(st.routineOpen));
    item("refused compactions", String(st.refusals), st.refusals ? "bad" : "");
  };

  // -- drawing
  Session.prototype.x = function (p) {
    var w = this.width - LEFT - RIGHT;
    return LEFT + (this.endAll ? (p / this.endAll) * w : 0);
  };

  Session.prototype.draw = function (st) {
    var self = this,
      d = this.d;
    this.width = Math.max(760, this.svgbox.clientWidth || 1100);
    this.svgbox.textContent = "";
    var root = svg("svg", { width: this.width, class: "tl", role: "img" }, this.svgbox);
    svg("title", {}, root, "timeline of session " + d.id + " at version " + st.v);
    var y = this.axis(root, 0, st);
    var lanes = {};
    lanes.markers = y;
    y = this.lane(root, y, "markers", this.rows.markers + this.rows.resumes, "markers and resumes");
    [2, 1].forEach(function (t) {
      var rows = Math.max(1, self.rows.tier[t]) + self.rows.refused[t];
      lanes[t] = y;
      y = self.lane(root, y, "L" + t, rows, t === 2 ? "L2 digests" : "L1 summaries");
    });
    lanes.turns = y;
    y = this.lane(
      root,
      y,
      "L0",
      1 + Math.max(1, this.rows.truncations + this.rows.spills + this.rows.withdrawals),
      "L0 raw turns",
    );
    lanes.obligations = y;
    y = this.lane(
      root,
      y,
      "obligations",
      Math.max(1, this.rows.obligations) + (d.routine.length ? 1 : 0),
      "obligations",
    );
    root.setAttribute("height", String(y + 4));
    this.lanes = lanes;
    this.drawFuture(root, st, lanes.markers, y);
    this.drawCheckpoints(root, st, lanes.markers, lanes.obligations, lanes.obligations - GAP - 6);
    this.drawTurns(root, st, lanes.turns);
    this.drawRanges(root, st, lanes.turns + ROW + 2);
    this.drawWithdrawals(
      root,
      st,
      lanes.turns + ROW + 2 + (this.rows.truncations + this.rows.spills) * ROW,
    );
    [1, 2].forEach(function (t) {
      self.drawTier(root, st, t, lanes[t]);
    });
    this.drawMarkers(root, st, lanes);
    this.drawObligations(root, st, lanes.obligations);
    if (this.selected) this.highlight();
  };

  Session.prototype.axis = function (root, y, st) {
    var end = this.endAll,
      scale = end || 1, // no position yet: tick 0 alone, the axis drawn at full length
      step = Math.pow(10, Math.floor(Math.log10(scale))),
      ticks;
    while (scale / step < 4) step /= 2;
    while (scale / step > 12) step *= 2;
    if (this.d.unit === "turns") step = Math.max(1, Math.round(step));
    var g = svg("g", { class: "axis" }, root);
    var unit = this.d.unit === "turns" ? "turn" : "token";
    svg("text", { x: 4, y: y + 14, class: "lanelabel" }, g, unit);
    for (ticks = 0; ticks <= end + 1e-9; ticks += step) {
      var x = this.x(ticks);
      svg("line", { x1: x, x2: x, y1: y + 18, y2: y + 24 }, g);
      svg("text", { x: x, y: y + 14, "text-anchor": "middle" }, g, fmt(Math.round(ticks)));
    }
    svg("line", { x1: LEFT, x2: this.width - RIGHT, y1: y + 24, y2: y + 24 }, g);
    return y + 30;
  };

  Session.prototype.lane = function (root, y, key, rows, label) {
    var h = rows * ROW + GAP;
    svg("rect", { x: 0, y: y, width: this.width, height: h - 4, class: "lane lane-" + key }, root);
    var t = svg("text", { x: 8, y: y + 16, class: "lanelabel" }, root);
    t.textContent = visible(label);
    return y + h;
  };

  Session.prototype.drawFuture = function (root, st, top, bottom) {
    if (st.end >= this.endAll) return;
    var x = this.x(st.end);
    svg(
      "rect",
      { x: x, y: top, width: this.x(this.endAll) - x, height: bottom - top, class: "future" },
      root,
    );
    var note = "not written yet at v" + st.v;
    svg("text", { x: x + 6, y: bottom - 8, class: "futurelabel" }, root, note);
  };

  Session.prototype.drawCheckpoints = function (root, st, top, bottom, labelY) {
    var self = this;
    this.d.points.forEach(function (p) {
      if (p.kind !== "checkpoint" || p.version > st.v) return;
      var x = self.x(p.position);
      var g = self.mark(root, "checkpoint", p, p.version, "checkpoint");
      svg("line", { x1: x, x2: x, y1: top, y2: bottom - GAP, class: "ckline" }, g);
      svg("text", { x: x + 3, y: labelY, class: "cklabel" }, g, "checkpoint v" + p.version);
    });
  };

  Session.prototype.mark = function (parent, kind, obj, version, status) {
    var self = this;
    var g = svg(
      "g",
      { class: "mark " + kind, "data-version": version, "data-status": status },
      parent,
    );
    g.addEventListener("mouseenter", function (ev) {
      self.tipFor(kind, obj, ev);
    });
    g.addEventListener("mousemove", function (ev) {
      self.moveTip(ev);
    });
    g.addEventListener("mouseleave", function () {
      self.tip.style.display = "none";
    });
    g.addEventListener("click", function (ev) {
      ev.stopPropagation();
      self.select(kind, obj, true);
    });
    g.__obj = obj;
    return g;
  };

  // Turns (or, past the detail limit, runs of turns) as bars over their positions. A
  // zero-token turn has no width: those at one position share a column ZERO px wide,
  // centred on it and drawn over its neighbours, one slice each, so that each shows and
  // takes a click without moving any position.
  var ZERO = 7;
  Session.prototype.drawTurns = function (root, st, y) {
    var self = this,
      detailed = this.d.info.length === this.total && this.total > 0,
      items = [];
    if (detailed) {
      for (var i = 0; i < st.turns; i++) {
        var status = STATUS[st.status[i]];
        items.push({
          kind: "turn",
          obj: { index: i, status: status, since: st.since[i] },
          version: this.tv[i],
          lo: this.pos(i),
          hi: this.pos(i + 1),
          text: "#" + i + " " + this.d.info[i][0],
          gap: 1,
        });
      }
    } else {
      var start = 0;
      for (i = 1; i <= st.turns; i++) {
        if (i < st.turns && st.status[i] === st.status[start] && st.since[i] === st.since[start])
          continue;
        if (st.status[start] === 0) {
          // resident runs merge whatever their turns' versions
          while (i < st.turns && st.status[i] === 0) i++;
        }
        status = STATUS[st.status[start]];
        items.push({
          kind: "band",
          obj: { first: start, last: i - 1, status: status, since: st.since[start] },
          version: st.since[start],
          lo: this.pos(start),
          hi: this.pos(i),
          text: (i - start === 1 ? "#" + start : fmt(i - start) + " turns") + " " + status,
          gap: 0,
        });
        start = i;
      }
    }
    var top = y + 4,
      h = ROW - 4,
      zero = [];
    items.forEach(function (it) {
      if (it.hi === it.lo) {
        var last = zero[zero.length - 1];
        if (last && last[0].lo === it.lo) last.push(it);
        else zero.push([it]);
        return;
      }
      var g = self.turnMark(root, it),
        x0 = self.x(it.lo),
        x1 = self.x(it.hi),
        width = Math.max(1, x1 - x0 - it.gap);
      svg("rect", { x: x0, y: top, width: width, height: h, class: "r-" + it.obj.status }, g);
      var text = fit(it.text, x1 - x0 - 6);
      if (text) svg("text", { x: x0 + 4, y: top + 14, class: "in-" + it.obj.status }, g, text);
    });
    zero.forEach(function (column) {
      var x = self.x(column[0].lo) - ZERO / 2,
        slice = h / column.length;
      column.forEach(function (it, k) {
        var cls = "r-" + it.obj.status + " zero";
        svg(
          "rect",
          { x: x, y: top + k * slice, width: ZERO, height: slice, class: cls },
          self.turnMark(root, it),
        );
      });
    });
  };

  Session.prototype.turnMark = function (root, it) {
    var g = this.mark(root, it.kind, it.obj, it.version, it.obj.status);
    if (it.kind === "turn") g.setAttribute("data-index", String(it.obj.index));
    else g.setAttribute("data-count", String(it.obj.last - it.obj.first + 1));
    return g;
  };

  Session.prototype.drawRanges = function (root, st, y) {
    var self = this;
    ["truncation", "spill"].forEach(function (kind) {
      var shown = self.d.ranges.filter(function (r) {
        return r.kind === kind && r.version <= st.v;
      });
      var glyph = kind === "truncation" ? "\u2702 " : "\u2913 ",
        word = kind === "truncation" ? "truncated" : "spilled";
      self.drawSpans(root, shown, y + (kind === "spill" && self.rows.truncations ? ROW : 0) + 4, {
        kind: function () {
          return kind;
        },
        status: function () {
          return kind;
        },
        cls: kind,
        at: function (r) {
          return r.lo;
        },
        labels: function (r) {
          return [
            glyph + word + " at v" + r.version,
            glyph + word + " v" + r.version,
            glyph + "v" + r.version,
          ];
        },
      });
    });
  };

  Session.prototype.drawWithdrawals = function (root, st, y) {
    var shown = this.d.withdrawals.filter(function (w) {
      return w.version <= st.v;
    });
    this.drawSpans(root, shown, y + 4, {
      kind: function () {
        return "withdrawal";
      },
      status: function (w) {
        return w.kind;
      },
      cls: "withdrawal",
      at: function (w) {
        return w.hi; // a withdrawal that took nothing new: a tick where it happened
      },
      labels: function (w) {
        var glyph = w.kind === "retraction" ? "\u21a9 " : "\u2205 ",
          word = w.kind === "retraction" ? "retracted" : "cleared";
        return [
          glyph + word + " at v" + w.version,
          glyph + word + " v" + w.version,
          glyph + "v" + w.version,
        ];
      },
    });
  };

  // One row of range marks: each piece a bracket; the first piece of each is labelled,
  // the label as long as the room before the next label of the row allows.
  Session.prototype.drawSpans = function (root, items, yy, how) {
    var self = this;
    var pieces = function (r) {
      return r.pieces.length ? r.pieces : [[how.at(r), how.at(r)]];
    };
    var room = this.roomAfter(
      items,
      function (r) {
        return self.x(pieces(r)[0][0]);
      },
      function () {
        return 0;
      },
      3,
    );
    items.forEach(function (r) {
      var g = self.mark(root, how.kind(r), r, r.version, how.status(r));
      pieces(r).forEach(function (p, i) {
        var x0 = self.x(p[0]),
          x1 = Math.max(self.x(p[1]), x0 + 2),
          cls = "rl-" + how.cls;
        svg("line", { x1: x0, x2: x1, y1: yy, y2: yy, class: cls }, g);
        svg("line", { x1: x0, x2: x0, y1: yy - 4, y2: yy + 4, class: cls }, g);
        svg("line", { x1: x1, x2: x1, y1: yy - 4, y2: yy + 4, class: cls }, g);
        if (i) return;
        var text = fitFirst(how.labels(r), room.get(r));
        if (text)
          svg("text", { x: x0 + 3, y: yy + 14, class: "rt-" + how.cls }, g, text);
      });
    });
  };

  Session.prototype.drawTier = function (root, st, tier, y) {
    var self = this,
      nodeRows = Math.max(1, this.rows.tier[tier]),
      any = false;
    this.d.nodes.forEach(function (n) {
      if (n.tier !== tier || n.version > st.v) return;
      any = true;
      var status = self.nodeAt(n, st.v),
        live = status === "live";
      var g = self.mark(root, "node", n, n.version, status);
      g.setAttribute("data-id", n.node_id);
      var x0 = self.x(n.lo),
        x1 = self.x(n.hi),
        top = y + 4 + n.row * ROW;
      svg(
        "rect",
        {
          x: x0,
          y: top,
          width: Math.max(2, x1 - x0 - 1),
          height: ROW - 4,
          rx: 3,
          class: "n-" + status + " t" + tier,
        },
        g,
      );
      var how = {
        live: " ",
        replaced: " replaced by " + n.replaced_by + " \u00b7 ",
        cleared: " cleared at v" + n.cleared_at + " \u00b7 ",
      };
      var label = n.node_id + " L" + tier + how[status] + "\u201c" + n.summary + "\u201d";
      var text = fit(label, x1 - x0 - 8);
      if (text) {
        var t = svg("text", { x: x0 + 5, y: top + 14, class: "nt-" + status }, g, text);
        shrink(t, x1 - x0 - 8, 2);
      }
    });
    this.d.refusals.forEach(function (r) {
      if (r.tier !== tier || r.version > st.v) return;
      any = true;
      var g = self.mark(root, "refusal", r, r.version, "refused");
      g.setAttribute("data-id", r.node_id);
      var x0 = self.x(r.lo),
        x1 = self.x(r.hi),
        top = y + 4 + (nodeRows + r.row) * ROW;
      svg(
        "rect",
        {
          x: x0,
          y: top,
          width: Math.max(2, x1 - x0 - 1),
          height: ROW - 4,
          rx: 3,
          class: "refused",
        },
        g,
      );
      var text = fit(
        "\u2717 REFUSED " + r.node_id + " (" + rules(r.violations) + ", " + r.action + ")",
        x1 - x0 - 8,
      );
      if (text) {
        var t = svg("text", { x: x0 + 5, y: top + 14, class: "rt" }, g, text);
        shrink(t, x1 - x0 - 8, 2);
      }
    });
    if (!any)
      svg(
        "text",
        { x: LEFT + 6, y: y + 16, class: "none" },
        root,
        "no L" + tier + " summary at v" + st.v,
      );
  };

  Session.prototype.nodeY = function (id) {
    var n = this.d.nodes.filter(function (x) {
      return x.node_id === id;
    })[0];
    return n ? this.lanes[n.tier] + 4 + n.row * ROW : null;
  };

  // Pixels free after each item before the next one in its row (or the right edge).
  Session.prototype.roomAfter = function (items, xOf, rowOf, pad) {
    var self = this,
      room = new Map(),
      rows = {};
    if (pad === undefined) pad = 12;
    items.forEach(function (it) {
      (rows[rowOf(it)] = rows[rowOf(it)] || []).push(it);
    });
    Object.keys(rows).forEach(function (r) {
      var row = rows[r].sort(function (a, b) {
        return xOf(a) - xOf(b);
      });
      row.forEach(function (it, i) {
        var next = i + 1 < row.length ? xOf(row[i + 1]) - pad : self.width - RIGHT;
        room.set(it, next - xOf(it) - pad);
      });
    });
    return room;
  };

  // Label marks row by row, left to right: a label goes on the right of its mark when its
  // longest form fits there, else on the left (text-anchor end) when it fits there, else
  // on the roomier side, as long as that room allows. Widths are measured, not guessed.
  // Each item: { g, x, row, y, cls, options }; gap: from the mark's x to its label.
  Session.prototype.placeLabels = function (items, gap, min) {
    var self = this,
      rows = {},
      PAD = 6;
    items.forEach(function (it) {
      (rows[it.row] = rows[it.row] || []).push(it);
    });
    Object.keys(rows).forEach(function (r) {
      var row = rows[r].sort(function (a, b) {
          return a.x - b.x;
        }),
        used = LEFT; // where the row's previous label (or mark) ends
      row.forEach(function (it, i) {
        var next = i + 1 < row.length ? row[i + 1].x - gap : self.width - RIGHT,
          right = next - it.x - gap - PAD,
          left = it.x - gap - used - PAD,
          want = visible(it.options[0]).length * 6.4,
          onLeft = want > right && (want <= left || left > right),
          room = onLeft ? left : right,
          text = fitFirst(it.options, room);
        used = Math.max(used, it.x + gap / 2);
        if (text.length < min) return;
        var t = svg(
          "text",
          {
            x: onLeft ? it.x - gap : it.x + gap,
            y: it.y,
            class: it.cls,
            "text-anchor": onLeft ? "end" : null,
          },
          it.g,
          text,
        );
        var w = shrink(t, room, min);
        if (!onLeft) used = it.x + gap + w;
      });
    });
  };

  // Cut a drawn label to the pixels it has (fit guesses 6.4 px a character; bold capitals
  // are wider): its width then, 0 if fewer than min characters were left (it is removed).
  function shrink(t, room, min) {
    var w = t.getComputedTextLength(),
      text = t.textContent;
    if (w <= room) return w;
    var n = Math.floor((text.length * room) / w) - 1;
    if (n < min) {
      t.parentNode.removeChild(t);
      return 0;
    }
    t.textContent = text.slice(0, n) + "\u2026";
    return t.getComputedTextLength();
  }

  Session.prototype.drawMarkers = function (root, st, lanes) {
    var self = this,
      level = new Map(),
      stack = {};
    var shown = this.d.markers.filter(function (m) {
      return m.version <= st.v;
    });
    shown.forEach(function (m) {
      stack[m.position] = (stack[m.position] || 0) + 1;
      level.set(m, stack[m.position] - 1);
    });
    var labels = [];
    shown.forEach(function (m) {
      var status = self.markerAt(m, st.v);
      var g = self.mark(root, "marker", m, m.version, status);
      g.setAttribute("data-id", m.marker_id);
      var x = self.x(m.position),
        cy = lanes.markers + 4 + level.get(m) * ROW + ROW / 2 - 2;
      var ny = self.nodeY(m.node_id);
      if (ny !== null)
        svg("line", { x1: x, x2: x, y1: cy + 7, y2: ny, class: "link link-" + status }, g);
      if (status === "valid")
        svg("path", { d: "M" + (x - 7) + " " + (cy + 7) + " l7 -14 l7 14 z", class: "g-valid" }, g);
      else svg("circle", { cx: x, cy: cy, r: 8, class: "g-" + status }, g);
      var glyph = status === "valid" ? "" : status === "refused" ? "\u2717" : "!";
      svg("text", { x: x, y: cy + 4, "text-anchor": "middle", class: "glyph" }, g, glyph);
      var what =
        status === "valid"
          ? " valid"
          : status === "refused"
            ? " REFUSED " + rules(m.violations)
            : " INVALIDATED " + m.rule;
      labels.push({
        g: g,
        x: x,
        row: level.get(m),
        y: cy + 4,
        cls: "mt-" + status,
        options: [m.marker_id + " on " + m.node_id + what, m.marker_id + what, m.marker_id],
      });
    });
    this.placeLabels(labels, 11, 2);
    var row = this.rows.markers,
      below = new Map(),
      count = {};
    var resumes = this.d.points.filter(function (p) {
      return p.kind !== "checkpoint" && p.version <= st.v;
    });
    resumes.forEach(function (p) {
      count[p.position] = (count[p.position] || 0) + 1;
      below.set(p, count[p.position] - 1);
    });
    labels = [];
    resumes.forEach(function (p) {
      var raw = p.kind === "resume_raw_checkpoint",
        status = raw ? "raw" : "digest";
      var g = self.mark(root, "resume", p, p.version, status);
      var x = self.x(p.position),
        cy = lanes.markers + 4 + (row + below.get(p)) * ROW + ROW / 2 - 2;
      svg("circle", { cx: x, cy: cy, r: 6, class: "g-resume-" + status }, g);
      var to = raw ? "raw checkpoint" : "digest";
      labels.push({
        g: g,
        x: x,
        row: below.get(p),
        y: cy + 4,
        cls: "mt-resume",
        options: [
          "\u21ba resume " + p.marker_id + " \u2192 " + to + " (v" + p.version + ")",
          "\u21ba " + p.marker_id + " \u2192 " + to,
          "\u21ba",
        ],
      });
    });
    this.placeLabels(labels, 9, 1);
  };

  var KIND = { open_call: "call", constraint: "constraint", negative_fact: "negative fact" };

  Session.prototype.drawObligations = function (root, st, y) {
    var self = this,
      shown = this.d.obligations.filter(function (o) {
        return o.version <= st.v;
      });
    var labels = [];
    shown.forEach(function (o) {
      var status = self.obligationAt(o, st.v, st.live);
      var g = self.mark(root, "obligation", o, o.version, status);
      g.setAttribute("data-kind", o.kind);
      g.setAttribute("data-id", o.key);
      var x0 = self.x(o.position),
        x1 = self.x(status === "ended" ? o.extent : st.end),
        cy = y + 4 + o.row * ROW + ROW / 2 - 2;
      x1 = Math.max(x1, x0 + 6);
      svg("line", { x1: x0, x2: x1, y1: cy, y2: cy, class: "ol-" + status }, g);
      svg("circle", { cx: x0, cy: cy, r: 5, class: "oc-" + status }, g);
      if (status === "ended")
        svg("line", { x1: x1, x2: x1, y1: cy - 5, y2: cy + 5, class: "ol-ended" }, g);
      var word = {
        open: "in context",
        carried:
          "carried by " +
          o.carried_by
            .filter(function (id) {
              return st.live[id];
            })
            .join(", "),
        dropped: "DROPPED",
        ended: o.ended,
      };
      labels.push({
        g: g,
        x: x0,
        row: o.row,
        y: cy - 5,
        cls: "ot-" + status,
        options: [
          KIND[o.kind] + " " + o.key + " \u2014 " + word[status],
          o.key + " \u2014 " + word[status],
          o.key,
        ],
      });
    });
    this.placeLabels(labels, 8, 4);
    if (!this.d.routine.length) return;
    var row = Math.max(1, this.rows.obligations),
      cy = y + 4 + row * ROW;
    svg("text", { x: 8, y: cy + 12, class: "lanelabel small" }, root, "routine (banded)");
    if (!shown.length)
      svg(
        "text",
        { x: LEFT + 6, y: y + 16, class: "none" },
        root,
        "no obligation beyond routine ones at v" + st.v,
      );
    this.d.routine.forEach(function (b) {
      var open = 0,
        done = 0;
      for (var k = 0; k < b.raisedV.length; k++)
        if (b.raisedV[k] <= st.v) {
          if (st.v < b.endedV[k]) open++;
          else done++;
        }
      if (!open && !done) return;
      var obj = { kind: b.kind, lo: b.lo, hi: b.hi, open: open, done: done };
      var g = self.mark(root, "routine", obj, b.raisedV[0], open ? "open" : "ended");
      g.setAttribute("data-count", String(open + done));
      var x0 = self.x(b.lo),
        x1 = Math.max(self.x(b.hi), x0 + 1);
      svg(
        "rect",
        {
          x: x0,
          y: cy,
          width: x1 - x0,
          height: ROW - 8,
          class: open ? "rb-open" : "rb-ended",
          opacity: Math.min(1, 0.4 + (open + done) / 30),
        },
        g,
      );
    });
  };

  // -- hover and click
  Session.prototype.describe = function (kind, o) {
    var st = this.st,
      v = st.v,
      self = this,
      L = [];
    function row(k, val) {
      L.push([k, val]);
    }
    var title = "",
      rulesList = [];
    if (kind === "turn" || kind === "band") {
      var first = kind === "turn" ? o.index : o.first,
        last = kind === "turn" ? o.index : o.last;
      title =
        first === last
          ? "turn #" + first
          : "turns #" + first + "\u2013#" + last + " (" + fmt(last - first + 1) + ")";
      row("status at v" + v, o.status + (o.status === "resident" ? "" : " since v" + o.since));
      row("positions", span(this.pos(first), this.pos(last + 1)) + " " + this.unitName() + "s");
      row("tokens", fmt(this.tok[last + 1] - this.tok[first]));
      row("appended at", "v" + this.tv[first] + (first === last ? "" : "\u2013v" + this.tv[last]));
      if (this.tcut[first]) row("truncated at", "v" + this.tcut[first]);
      if (this.tspill[first]) row("spilled at", "v" + this.tspill[first]);
      if (this.twd[first]) {
        var wd = this.withdrawalAt[this.twd[first]];
        row(
          "withdrawn at",
          "v" +
            wd.version +
            " (" +
            WITHDRAWAL[wd.kind] +
            (wd.reason ? ": " + wd.reason : "") +
            ")" +
            (wd.version > v ? ", later" : ""),
        );
      }
      var info = kind === "turn" ? this.d.info[first] : null;
      if (info) {
        row("role", info[0]);
        row("content", info[2]);
      }
    } else if (kind === "node") {
      title = "summary node " + short(o.node_id) + " (L" + o.tier + ", " + this.nodeAt(o, v) + ")";
      row("committed", "v" + o.version + " (Compacted)");
      if (o.replaced_at) row("replaced", "v" + o.replaced_at + " by " + o.replaced_by);
      if (o.cleared_at) {
        var by = this.withdrawalAt[o.cleared_at];
        row(
          "cleared",
          "v" +
            o.cleared_at +
            " (ContextCleared" +
            (by && by.reason ? ": " + by.reason : "") +
            ")" +
            (o.cleared_at > v ? ", later" : ""),
        );
      }
      row("covers", span(o.lo, o.hi) + ", tail starts at " + fmt(o.tail_start));
      row("summarizer input", span(o.input_lo, o.input_hi));
      row("tokens", fmt(o.tokens));
      row("summary", o.summary);
      row("carries calls", o.calls.join(", ") || "none");
      row("carries constraints", o.constraints.join(", ") || "none");
      row(
        "carries negative facts",
        Object.keys(o.dispositions)
          .map(function (k) {
            return k + "=" + o.dispositions[k];
          })
          .join(", ") || "none",
      );
      row("required but not carried (M1/M2)", missingOf(o).join(", ") || "none");
    } else if (kind === "refusal") {
      title = "REFUSED compaction " + short(o.node_id) + " (L" + o.tier + ")";
      row("refused at", "v" + o.version + " (CompactionRefused, " + o.action + ")");
      row("proposed covers", span(o.lo, o.hi) + ", tail starts at " + fmt(o.tail_start));
      row("summarizer input", span(o.input_lo, o.input_hi));
      row("summary", o.summary);
      rulesList = o.violations;
    } else if (kind === "marker") {
      var status = this.markerAt(o, v);
      title = "marker " + short(o.marker_id) + " on " + short(o.node_id) + " (" + status + ")";
      row(
        o.refused ? "refused at" : "emitted at",
        "v" + o.version + (o.refused ? " (MarkerRefused)" : " (MarkerEmitted)"),
      );
      row("depth", "L" + o.tier_depth);
      row("points at", "the seam of " + o.node_id + ", position " + fmt(o.position));
      var node = this.d.nodes.filter(function (n) {
        return n.node_id === o.node_id;
      })[0];
      if (node) {
        row(
          o.node_id,
          "L" +
            node.tier +
            " \u201c" +
            node.summary.slice(0, 120) +
            "\u201d; does not carry: " +
            (missingOf(node).join(", ") || "nothing it must"),
        );
      }
      this.d.points.forEach(function (p) {
        if (p.marker_id !== o.marker_id || p.version > v) return;
        var raw = p.kind === "resume_raw_checkpoint";
        row("resumed v" + p.version, raw ? "raw checkpoint at " + fmt(p.position) : "the digest");
      });
      if (o.invalidated_at)
        row(
          "invalidated at",
          "v" + o.invalidated_at + " (" + o.rule + ")" + (o.invalidated_at > v ? ", later" : ""),
        );
      if (o.invalidated_at && o.invalidated_at <= v) row("reason", o.reason);
      rulesList = o.violations;
    } else if (kind === "obligation") {
      var ost = this.obligationAt(o, v, st.live);
      var said = ost === "dropped" ? "DROPPED" : ost;
      title = KIND[o.kind] + " " + short(o.key) + " (" + said + ")";
      row("what", o.detail);
      row("raised", "v" + o.version + " at position " + fmt(o.position));
      if (o.ended_at)
        row(o.ended_at <= v ? "ended" : "ends later", "v" + o.ended_at + ": " + o.ended);
      row(
        "carried by",
        o.carried_by
          .map(function (id) {
            return id + (st.live[id] ? " (live)" : "");
          })
          .join(", ") || "no node",
      );
      row(
        "inside the range of",
        o.covered_by
          .map(function (id) {
            return id + (st.live[id] ? " (live)" : "");
          })
          .join(", ") || "no node",
      );
      if (o.fell_out_at)
        row(
          "fell out of the context",
          "v" + o.fell_out_at + " (truncation)" + (o.fell_out_at > v ? ", later" : ""),
        );
      if (o.withdrawn_at) {
        var took = this.withdrawalAt[o.withdrawn_at];
        row(
          "withdrawn from the context",
          "v" +
            o.withdrawn_at +
            " (" +
            (took ? WITHDRAWAL[took.kind] : "withdrawn with its turn") +
            ")" +
            (o.withdrawn_at > v ? ", later" : ""),
        );
      }
    } else if (kind === "truncation" || kind === "spill") {
      title = (kind === "truncation" ? "truncation " : "spill ") + span(o.lo, o.hi);
      row("at", "v" + o.version);
      row(kind === "truncation" ? "reason" : "file", o.detail);
    } else if (kind === "withdrawal") {
      var turns =
        o.stop - o.first === 1
          ? "turn #" + o.first
          : o.stop > o.first
            ? "turns #" + o.first + "\u2013#" + (o.stop - 1)
            : "no turn";
      title = o.kind === "retraction" ? turns + " retracted" : "context cleared: " + turns;
      row("at", "v" + o.version + " (" + WITHDRAWAL[o.kind] + ")");
      row("reason", o.reason || "none given");
      row("positions", span(o.lo, o.hi) + " " + this.unitName() + "s");
      if (o.kind === "clear") row("summaries taken out", o.nodes.join(", ") || "none live");
      row(
        "markers it broke",
        o.invalidated
          .map(function (id) {
            var m = self.d.markers.filter(function (x) {
              return x.marker_id === id;
            })[0];
            return (
              id + (m && m.invalidated_at ? " (MarkerInvalidated v" + m.invalidated_at + ")" : "")
            );
          })
          .join(", ") || "none",
      );
      row("the log", "keeps the turns; what they raised stays owed");
    } else if (kind === "checkpoint") {
      title = "raw checkpoint at " + fmt(o.position);
      row("at", "v" + o.version);
    } else if (kind === "resume") {
      title = "resume of " + short(o.marker_id);
      row("at", "v" + o.version);
      row(
        "returned",
        o.kind === "resume_digest" ? "the digest" : "the raw checkpoint at " + fmt(o.position),
      );
      row("why", o.detail);
    } else if (kind === "routine") {
      title = fmt(o.open + o.done) + " routine " + KIND[o.kind] + "s in " + span(o.lo, o.hi);
      row("open at v" + v, fmt(o.open));
      row("ended", fmt(o.done));
      row(
        "routine",
        "each ended before a truncation, a withdrawal or a live summary took it out of the context",
      );
    }
    return { title: title, rows: L, rules: rulesList };
  };

  Session.prototype.fill = function (box, info, full) {
    box.textContent = "";
    html("div", "dtitle", clip(info.title, LABEL), box);
    var table = html("table", "dtable", null, box);
    info.rows.forEach(function (r) {
      var tr = html("tr", null, null, table);
      html("th", null, r[0], tr);
      var val = String(r[1]);
      html("td", null, full ? clip(val, DETAIL) : fit(val, 300 * 6.4), tr);
    });
    if (info.rules.length) {
      var ul = html("ul", "rules", null, box);
      info.rules.forEach(function (x) {
        var li = html("li", "rule", null, ul);
        html("b", "code", x.rule, li);
        html(
          "span",
          "name",
          " " + x.name + (x.lo !== null ? " " + span(x.lo, x.hi) : "") + ": ",
          li,
        );
        html("span", "msg", x.message, li);
      });
    }
  };

  Session.prototype.tipFor = function (kind, obj, ev) {
    this.fill(this.tip, this.describe(kind, obj), false);
    this.tip.style.display = "block";
    this.moveTip(ev);
  };

  Session.prototype.moveTip = function (ev) {
    var t = this.tip,
      w = t.offsetWidth,
      h = t.offsetHeight;
    var x = ev.clientX + 14,
      y = ev.clientY + 14;
    if (x + w > window.innerWidth - 8) x = Math.max(8, ev.clientX - w - 14);
    if (y + h > window.innerHeight - 8) y = Math.max(8, ev.clientY - h - 14);
    t.style.left = x + "px";
    t.style.top = y + "px";
  };

  Session.prototype.select = function (kind, obj, scroll) {
    this.selected = { kind: kind, obj: obj };
    this.details.classList.add("has");
    this.fill(this.details, this.describe(kind, obj), true);
    this.highlight();
    if (scroll && this.details.scrollIntoViewIfNeeded) this.details.scrollIntoViewIfNeeded();
  };

  Session.prototype.highlight = function () {
    var sel = this.selected;
    Array.prototype.forEach.call(this.svgbox.querySelectorAll(".mark"), function (g) {
      g.classList.toggle("selected", !!sel && g.__obj === sel.obj);
    });
  };

  // -- sessions: one shown at a time
  function start() {
    var sections = document.querySelectorAll("section.session"),
      views = {};
    function open(id) {
      Array.prototype.forEach.call(sections, function (s) {
        var on = s.getAttribute("data-session") === id;
        s.hidden = !on;
        if (on && !views[id]) {
          var data = JSON.parse(s.querySelector("script[type='application/json']").textContent);
          views[id] = new Session(s, data);
        }
      });
      Array.prototype.forEach.call(document.querySelectorAll("[data-open]"), function (a) {
        a.classList.toggle("current", a.getAttribute("data-open") === id);
      });
    }
    Array.prototype.forEach.call(document.querySelectorAll("[data-open]"), function (a) {
      a.addEventListener("click", function (ev) {
        ev.preventDefault();
        open(a.getAttribute("data-open"));
      });
    });
    Array.prototype.forEach.call(document.querySelectorAll("[data-goto]"), function (a) {
      a.addEventListener("click", function (ev) {
        ev.preventDefault();
        var s = a.closest("section.session"),
          view = views[s.getAttribute("data-session")];
        if (view) {
          view.show(Number(a.getAttribute("data-goto")));
          view.section.querySelector(".controls").scrollIntoView();
        }
      });
    });
    if (sections.length) open(sections[0].getAttribute("data-session"));
    window.tierlogReport = { views: views, open: open };
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
