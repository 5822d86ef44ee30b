# The page of `ordo view` as one file: view.html with view.css and view.js put in place of their
# placeholders, leaving only @ORDO_VIEW_DATA@ for the command to fill (and <!--@ORDO_ENGINE@-->, for
# `ordo view --standalone`'s engine and model; a comment elsewhere). Writes it as HTML (for the tests
# and for a look in a browser) and as a C++ header holding one string.
#   cmake -DVIEW_DIR=tools/teach/view -DOUT_HTML=... -DOUT_HEADER=... -P embed.cmake
file(READ ${VIEW_DIR}/view.html page)
file(READ ${VIEW_DIR}/view.css css)
file(READ ${VIEW_DIR}/view.js js)
string(REPLACE "/*@VIEW_CSS@*/" "${css}" page "${page}")
string(REPLACE "/*@VIEW_JS@*/" "${js}" page "${page}")

string(FIND "${page}" "@ORDO_VIEW_DATA@" first)
string(FIND "${page}" "@ORDO_VIEW_DATA@" last REVERSE)
if(first EQUAL -1 OR NOT first EQUAL last)
  message(FATAL_ERROR "${VIEW_DIR}: the page must hold @ORDO_VIEW_DATA@ exactly once")
endif()
string(FIND "${page}" "<!--@ORDO_ENGINE@-->" first)
string(FIND "${page}" "<!--@ORDO_ENGINE@-->" last REVERSE)
if(first EQUAL -1 OR NOT first EQUAL last)
  message(FATAL_ERROR "${VIEW_DIR}: the page must hold <!--@ORDO_ENGINE@--> (where ordo view --standalone puts the engine) exactly once")
endif()
string(FIND "${page}" ")ordo_view_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${VIEW_DIR}: the page holds the string's end marker )ordo_view_page\"")
endif()

if(OUT_HTML)
  file(WRITE ${OUT_HTML}.partial "${page}")
  file(RENAME ${OUT_HTML}.partial ${OUT_HTML})
endif()
if(OUT_HEADER)
  # The page in parts of at most 30,000 bytes, each cut after a line (so no UTF-8 character is cut):
  # C++ compilers need not take a string literal longer than 65,536 bytes (clang warns past it).
  set(parts "")
  set(rest "${page}")
  string(LENGTH "${rest}" left)
  while(left GREATER 0)
    if(left GREATER 30000)
      string(SUBSTRING "${rest}" 0 30000 chunk)
      string(FIND "${chunk}" "\n" cut REVERSE)
      if(cut LESS 1)
        message(FATAL_ERROR "${VIEW_DIR}: the page has a line longer than 30,000 bytes")
      endif()
      math(EXPR take "${cut} + 1")
      string(SUBSTRING "${rest}" 0 ${take} chunk)
      string(SUBSTRING "${rest}" ${take} -1 rest)
    else()
      set(chunk "${rest}")
      set(rest "")
    endif()
    string(APPEND parts "    R\"ordo_view_page(${chunk})ordo_view_page\",\n")
    string(LENGTH "${rest}" left)
  endwhile()
  file(WRITE ${OUT_HEADER}.partial
       "// Made by tools/teach/view/embed.cmake from view.html, view.css and view.js: edit those.\n"
       "#pragma once\n"
       "#include <string>\n"
       "namespace ordo::teach {\n"
       "inline constexpr const char* kViewPageParts[] = {\n${parts}};\n"
       "// The page joined, made when a command asks for it (not as every process starts).\n"
       "inline std::string view_page() {\n"
       "  std::string page;\n"
       "  for (const char* part : kViewPageParts) page += part;\n"
       "  return page;\n"
       "}\n"
       "}  // namespace ordo::teach\n")
  file(RENAME ${OUT_HEADER}.partial ${OUT_HEADER})
endif()
